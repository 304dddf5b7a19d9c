/* EinStein würfelt nicht! rules and a cheap player; see einstein.h. */
#include "einstein.h"

#include <stdio.h>
#include <string.h>

static const int GOAL[2] = {24, 0}; /* red heads for e1, blue for a5 */

uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int fail(char *why, size_t why_len, const char *text) {
    snprintf(why, why_len, "%s", text);
    return -1;
}

int ein_parse(const char *text, Position *pos, char *why, size_t why_len) {
    char board[64], side[4], die[4], seat0[4], phase[8], extra;
    if (sscanf(text, "%63s %3s %3s %3s %7s %c", board, side, die, seat0, phase, &extra) != 5) {
        return fail(why, why_len, "expected five fields: board side die seat0 phase");
    }
    memset(pos, 0, sizeof *pos);
    int row = 0, col = 0, seen[2][7] = {{0}};
    for (const char *c = board; *c; c++) {
        if (*c == '/') {
            if (col != 5 || ++row > 4) return fail(why, why_len, "a rank without 5 squares, or more than 5 ranks");
            col = 0;
        } else if (*c >= '1' && *c <= '5') {
            col += *c - '0';
        } else if ((*c == 'R' || *c == 'B') && c[1] >= '1' && c[1] <= '6') {
            int colour = *c == 'R' ? RED : BLUE, n = c[1] - '0';
            if (col > 4 || seen[colour][n]++) return fail(why, why_len, "a rank too long, or a cube twice");
            pos->board[row * 5 + col++] = colour == RED ? n : -n;
            c++;
        } else {
            return fail(why, why_len, "unexpected character in the board");
        }
        if (col > 5) return fail(why, why_len, "a rank longer than 5 squares");
    }
    if (row != 4 || col != 5) return fail(why, why_len, "the board needs 5 ranks of 5 squares");
    if (strcmp(side, "r") && strcmp(side, "b")) return fail(why, why_len, "side must be r or b");
    if (strcmp(seat0, "r") && strcmp(seat0, "b")) return fail(why, why_len, "seat0 must be r or b");
    if (strcmp(die, "-") && !(die[0] >= '1' && die[0] <= '6' && !die[1]))
        return fail(why, why_len, "die must be 1-6 or -");
    if (strcmp(phase, "play") && strcmp(phase, "setup") && strcmp(phase, "deal") && strcmp(phase, "over")) {
        return fail(why, why_len, "phase must be setup, deal, play or over");
    }
    pos->side = side[0] == 'r' ? RED : BLUE;
    pos->seat0 = seat0[0] == 'r' ? RED : BLUE;
    pos->die = die[0] == '-' ? 0 : die[0] - '0';
    pos->playing = !strcmp(phase, "play");
    return 0;
}

/* Bit n set when the colour still has cube n. */
static int cube_mask(const int *board, int colour) {
    int mask = 0;
    for (int sq = 0; sq < SQUARES; sq++) {
        int v = colour == RED ? board[sq] : -board[sq];
        if (v > 0) mask |= 1 << v;
    }
    return mask;
}

/* The cubes the die lets move: its own, else the next-lower and the next-higher still there. */
static int movable(int mask, int die, int cubes[2]) {
    if (mask & (1 << die)) { cubes[0] = die; return 1; }
    int count = 0;
    for (int n = die - 1; n >= 1; n--) if (mask & (1 << n)) { cubes[count++] = n; break; }
    for (int n = die + 1; n <= 6; n++) if (mask & (1 << n)) { cubes[count++] = n; break; }
    return count;
}

/* Red steps right, down or down-right; blue left, up or up-left. */
static int steps(int colour, int sq, int out[3]) {
    int row = sq / 5, col = sq % 5, d = colour == RED ? 1 : -1, count = 0;
    const int rows[3] = {row, row + d, row + d}, cols[3] = {col + d, col, col + d};
    for (int i = 0; i < 3; i++)
        if (rows[i] >= 0 && rows[i] < 5 && cols[i] >= 0 && cols[i] < 5) out[count++] = rows[i] * 5 + cols[i];
    return count;
}

static int square_of(const int *board, int colour, int n) {
    for (int sq = 0; sq < SQUARES; sq++)
        if (board[sq] == (colour == RED ? n : -n)) return sq;
    return -1;
}

static int moves_for(const int *board, int colour, int die, Move moves[MAX_MOVES]) {
    int cubes[2], count = 0, n = movable(cube_mask(board, colour), die, cubes);
    for (int i = 0; i < n; i++) {
        int from = square_of(board, colour, cubes[i]), to[3], k = steps(colour, from, to);
        for (int j = 0; j < k; j++) moves[count++] = (Move){from, to[j]};
    }
    return count;
}

int ein_moves(const Position *pos, Move moves[MAX_MOVES]) {
    return pos->playing && pos->die ? moves_for(pos->board, pos->side, pos->die, moves) : 0;
}

static int distance(int colour, int sq) {
    int row = sq / 5, col = sq % 5;
    int a = colour == RED ? 4 - row : row, b = colour == RED ? 4 - col : col;
    return a > b ? a : b;
}

/* A race estimate: the fewest turns any one cube of the colour would need to reach the goal if
 * it stepped whenever a die selects it (distance times 6 over the die values that select it). */
static double race(const int *board, int colour) {
    int mask = cube_mask(board, colour), cubes[2];
    double best = 1e9;
    for (int n = 1; n <= 6; n++) {
        if (!(mask & (1 << n))) continue;
        int selected = 0;
        for (int die = 1; die <= 6; die++) {
            int k = movable(mask, die, cubes);
            selected += (cubes[0] == n) || (k == 2 && cubes[1] == n);
        }
        double turns = distance(colour, square_of(board, colour, n)) * 6.0 / selected;
        if (turns < best) best = turns;
    }
    return best;
}

/* Whether the colour's move from..to wins at once: it reaches the goal or takes the last enemy cube. */
static int wins(const int *board, int colour, Move m) {
    if (m.to == GOAL[colour]) return 1;
    int enemy = cube_mask(board, !colour);
    int taken = colour == RED ? -board[m.to] : board[m.to]; /* > 0: an enemy cube is taken */
    return taken > 0 && enemy == (1 << taken);
}

/* The chance (0..1) that the colour to roll next has a winning move. */
static double win_chance(const int *board, int colour) {
    Move moves[MAX_MOVES];
    int hits = 0;
    for (int die = 1; die <= 6; die++) {
        int n = moves_for(board, colour, die, moves);
        for (int i = 0; i < n; i++)
            if (wins(board, colour, moves[i])) { hits++; break; }
    }
    return hits / 6.0;
}

static void square_name(int sq, char out[2]) { out[0] = (char)('a' + sq % 5); out[1] = (char)('5' - sq / 5); }

int ein_choose(const Position *pos, uint64_t *rng, char out[5], double *score, int *nodes) {
    Move moves[MAX_MOVES];
    int n = ein_moves(pos, moves), me = pos->side, best = -1, ties = 0;
    double best_value = 0;
    *nodes = 0;
    for (int i = 0; i < n; i++) {
        double value;
        if (wins(pos->board, me, moves[i])) {
            value = 1e6;
        } else {
            int board[SQUARES];
            memcpy(board, pos->board, sizeof board);
            board[moves[i].to] = board[moves[i].from];
            board[moves[i].from] = 0;
            /* first: leave the opponent as few winning rolls as possible; then: the race */
            value = race(board, !me) - race(board, me) - 1000 * win_chance(board, !me);
        }
        ++*nodes;
        if (best < 0 || value > best_value + 1e-9) {
            best = i, best_value = value, ties = 1;
        } else if (value > best_value - 1e-9 && rng_next(rng) % (uint64_t)++ties == 0) {
            best = i; /* reservoir choice: each of the equal moves with the same chance */
        }
    }
    if (best < 0) return -1;
    square_name(moves[best].from, out);
    square_name(moves[best].to, out + 2);
    out[4] = '\0';
    *score = best_value;
    return 0;
}

void ein_setup(int colour, uint64_t *rng, char out[7]) {
    /* Red's home squares in layout order: a5 b5 c5 a4 b4 a3. The front square b4 gets a middle
     * cube (3 or 4: it gains the most die values as cubes fall), the front diagonal c5/a3 the
     * other middle cube and a 2 or 5, the back a 1 or 6. Blue's layout order (e3 d2 e2 c1 d1 e1)
     * is red's mirrored, so the same roles are the same digits in reverse. */
    int layout[6], flip;
    flip = (int)(rng_next(rng) & 1);
    layout[4] = flip ? 4 : 3;
    int middle = flip ? 3 : 4, two_five = rng_next(rng) & 1 ? 5 : 2, one_six = rng_next(rng) & 1 ? 6 : 1;
    flip = (int)(rng_next(rng) & 1);
    layout[2] = flip ? middle : two_five;
    layout[5] = flip ? two_five : middle;
    flip = (int)(rng_next(rng) & 1);
    layout[1] = flip ? 7 - two_five : one_six;
    layout[3] = flip ? one_six : 7 - two_five;
    layout[0] = 7 - one_six;
    for (int i = 0; i < 6; i++) out[colour == RED ? i : 5 - i] = (char)('0' + layout[i]);
    out[6] = '\0';
}
