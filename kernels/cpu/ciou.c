/* ciou.c - CIoU with its gradient (yp_ciou.h), the box term of the CPU backend's loss (loss.c).
 * The formula lives in yp_ciou.h (yp_ciou_eval) so that the CUDA backend compiles the same text;
 * this is its out-of-line C entry. */
#include "yp_ciou.h"

float yp_loss_ciou(const float p[4], const float t[4], float dp[4]) { return yp_ciou_eval(p, t, dp); }
