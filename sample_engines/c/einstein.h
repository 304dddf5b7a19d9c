/* EinStein würfelt nicht!: the rules an engine needs (parse a position, list the moves) and a
 * cheap player (a set-up layout, a one-ply greedy move with a look at the opponent's reply).
 * No sockets here: engine.c does the protocol, so this file is the one to replace with your own
 * game logic. Rules: docs/games/einstein.md. */
#ifndef EINSTEIN_H
#define EINSTEIN_H

#include <stddef.h>
#include <stdint.h>

enum { RED = 0, BLUE = 1 };
#define SQUARES 25
#define MAX_MOVES 6 /* at most two movable cubes with at most three steps each */

typedef struct {
    int board[SQUARES]; /* row-major from a5 (0) to e1 (24): +n red cube n, -n blue cube n, 0 empty */
    int side;           /* the colour to move */
    int die;            /* 1..6, or 0 when no die is showing */
    int seat0;          /* the colour of seat 0 */
    int playing;        /* 1 in the play phase; 0 in set-up, deal or over */
} Position;

typedef struct { int from, to; } Move;

/* Parses the position text ("R1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r 3 r play", any phase).
 * Returns 0, or -1 with the reason in why. */
int ein_parse(const char *text, Position *pos, char *why, size_t why_len);

/* The legal moves of the side to move for the die showing; returns how many. */
int ein_moves(const Position *pos, Move moves[MAX_MOVES]);

/* The move to play (its notation, e.g. "c5d4", in out[5]); the evaluation and the count of
 * positions looked at go to score and nodes. Equal moves are chosen between with rng. Returns
 * -1 when there is no legal move (no die, or no cube of the side to move). */
int ein_choose(const Position *pos, uint64_t *rng, char out[5], double *score, int *nodes);

/* A set-up layout for the colour (six digits, the cubes in the order of the colour's home
 * squares) in out[7], varied with rng. */
void ein_setup(int colour, uint64_t *rng, char out[7]);

/* splitmix64: the engine's only source of randomness, so a seed reproduces every choice. */
uint64_t rng_next(uint64_t *state);

#endif
