/* yp_splitmix64.h - splitmix64 (Steele, Lea and Flood; the constants of Vigna's public-domain C),
 * the one copy every random stream of yoloplan starts from: the output function (a 64-bit mixer),
 * the generator step (the state advances by the golden gamma, the new state is mixed), and the
 * step's value without keeping the state (a counter-based hash). Its users: the augmentation
 * generator's seeding (executor/augment.c), the initial weights (exec_conv.c), the synthetic
 * images (synth.c) and the benchmark's random batches (bench_loop.c). Header only, plain C11, in
 * kernels/ so that every library can include it. */
#ifndef YP_SPLITMIX64_H
#define YP_SPLITMIX64_H

#include <stdint.h>

#define YP_SPLITMIX64_GAMMA 0x9e3779b97f4a7c15ull

/* The output function: z mixed (two xor-shift-multiplies and a final xor-shift). */
static inline uint64_t yp_splitmix64_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The next value of the generator whose state is *state (advanced by the gamma). */
static inline uint64_t yp_splitmix64_next(uint64_t *state) {
    return yp_splitmix64_mix(*state += YP_SPLITMIX64_GAMMA);
}

/* The value a generator in state z gives next, z unchanged: a hash of z, so that value i of a
 * counter-based stream is yp_splitmix64_at(base + i), in any order. */
static inline uint64_t yp_splitmix64_at(uint64_t z) { return yp_splitmix64_next(&z); }

#endif
