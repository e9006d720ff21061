/* plan_card.h - `--load-plan F --gpu G`: does a saved plan fit another card? */
#ifndef YP_PLAN_CARD_H
#define YP_PLAN_CARD_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "plan_args.h"

typedef struct {
    yp_plan plan;     /* the saved plan's candidate planned on a->gpu with a->reserve */
    int fits;         /* plan.fits, and the card runs the plan's precision */
    char why[160];    /* why it does not fit ("" when it fits) */
} plan_card;

/* Plans saved's candidate on the card of --gpu (its fixed cost, margin and speed; the arena and the
 * validation pass do not depend on the card, and are checked to be the saved ones). 0, or -1 with
 * err set; the caller frees out->plan with yp_plan_free. */
int plan_card_build(const plan_args *a, const yp_plan *saved, plan_card *out, yp_err *err);

/* The answer as text: the card, its margin, FITS / DOES NOT FIT, the need, the room and the speed. */
void plan_card_print(FILE *f, const plan_card *c, const yp_plan *saved, int margin_pct);

/* The same as JSON (reports/JSON.md, "a saved plan on another card"). */
cJSON *plan_card_json(const plan_card *c, const yp_plan *saved);

#endif
