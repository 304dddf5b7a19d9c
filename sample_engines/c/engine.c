/* A sample engine in C for the arbiter protocol (protocol/SPEC.md): libzmq for the socket,
 * msgpack-c for the messages, einstein.c for the game. It plays EinStein würfelt nicht!, spawned by
 * the referee (ipc, ARBITER_ENDPOINT and ARBITER_SECRET_FILE) or connecting to a remote referee
 * over tcp with CURVE (--connect, --server-key, --key).
 *
 * Written from SPEC.md alone, as an entrant would: everything the protocol asks of an engine is
 * in this file, so it is the part to keep when you write your own engine in C or C++. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <msgpack.h>
#include <zmq.h>

#include "einstein.h"

#define PROTOCOL_VERSION 1
#define MAX_MESSAGE (1 << 20) /* SPEC.md: no message is larger than 1 MiB */
#define KEY_LEN 40            /* a CURVE key in Z85 text */

static const char *engine_name = "einstein-c";
static volatile sig_atomic_t interrupted;

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", engine_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Bad input: one line naming the flag or file, exit status 2. */
static void usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", engine_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static const char USAGE[] =
    "usage: einstein-c [--connect ENDPOINT | ENDPOINT] [--seed N] [--name NAME]\n"
    "                  [--server-key REFEREE.pub --key OWN.key]\n"
    "Plays EinStein wuerfelt nicht! for the arbiter. The endpoint defaults to $ARBITER_ENDPOINT;\n"
    "the session secret is read from $ARBITER_SECRET_FILE. With --server-key and --key the\n"
    "connection is CURVE-encrypted and authenticated (remote play over tcp).\n";

/* --- key files ------------------------------------------------------------------------------ */

/* Reads `field = "<40 Z85 characters>"` from a key file (TOML: `public = "..."`, `secret = "..."`;
 * blank lines and # comments allowed). Exits 2 naming the flag, file and line when it is wrong. */
static void read_key(const char *flag, const char *path, const char *field, char out[KEY_LEN + 1]) {
    FILE *f = fopen(path, "r");
    if (!f) usage_error("%s %s: cannot read it: %s", flag, path, strerror(errno));
    char line[512];
    int number = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        number++;
        char name[32], value[128], rest[2];
        const char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0') continue;
        int n = sscanf(p, "%31[A-Za-z_] = \"%127[^\"]\" %1s", name, value, rest);
        if (n < 2 || (n == 3 && rest[0] != '#'))
            usage_error("%s %s: line %d: expected NAME = \"<%d Z85 characters>\"", flag, path, number, KEY_LEN);
        if (strcmp(name, field)) continue;
        uint8_t raw[32];
        if (strlen(value) != KEY_LEN || !zmq_z85_decode(raw, value))
            usage_error("%s %s: line %d: %s is not %d Z85 characters", flag, path, number, field, KEY_LEN);
        memcpy(out, value, KEY_LEN + 1);
        found = 1;
    }
    fclose(f);
    if (!found) usage_error("%s %s: no %s = \"...\" line", flag, path, field);
}

/* The engine's own secret key must be private (mode 0600), as for ssh. */
static void check_private(const char *flag, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) usage_error("%s %s: cannot read it: %s", flag, path, strerror(errno));
    if (st.st_mode & 077)
        usage_error("%s %s: mode %03o lets others read the secret key; chmod 600 it", flag, path,
                    (unsigned)(st.st_mode & 0777));
}

/* --- outgoing messages ------------------------------------------------------------------------ */

/* A message being written: its entries go to buf, counted, and finish() puts the map header with
 * the count in front, so adding a field never means updating a count by hand. */
typedef struct {
    msgpack_sbuffer buf;
    msgpack_packer pk;
    uint32_t fields;
} Out;

static void put_key(Out *o, const char *key) {
    o->fields++;
    msgpack_pack_str_with_body(&o->pk, key, strlen(key));
}

static void put_str(Out *o, const char *key, const char *value) {
    put_key(o, key);
    msgpack_pack_str_with_body(&o->pk, value, strlen(value));
}

static void put_int(Out *o, const char *key, int64_t value) {
    put_key(o, key);
    msgpack_pack_int64(&o->pk, value);
}

/* Starts an empty map (its entries are counted as they are put). */
static void begin_map(Out *o) {
    msgpack_sbuffer_init(&o->buf);
    msgpack_packer_init(&o->pk, &o->buf, msgpack_sbuffer_write);
    o->fields = 0;
}

/* Writes the map `inner` (header and entries) into `o`, as the value of the key just put. */
static void end_map(Out *o, Out *inner) {
    msgpack_pack_map(&o->pk, inner->fields);
    msgpack_sbuffer_write(&o->buf, inner->buf.data, inner->buf.size);
    msgpack_sbuffer_destroy(&inner->buf);
}

/* Starts a message with the common fields type, game_id and seq. game_id and seq are echoed
 * exactly as received (SPEC.md: treat seq as opaque), or "" and 0 when absent. */
static void begin(Out *o, const char *type, const msgpack_object *game_id, const msgpack_object *seq) {
    begin_map(o);
    put_str(o, "type", type);
    put_key(o, "game_id");
    if (game_id) msgpack_pack_object(&o->pk, *game_id);
    else msgpack_pack_str_with_body(&o->pk, "", 0);
    put_key(o, "seq");
    if (seq) msgpack_pack_object(&o->pk, *seq);
    else msgpack_pack_int64(&o->pk, 0);
}

/* Sends the message: one message = one frame. */
static void finish(void *sock, Out *o) {
    Out frame;
    begin_map(&frame);
    end_map(&frame, o);
    if (zmq_send(sock, frame.buf.data, frame.buf.size, 0) < 0) say("send failed: %s", zmq_strerror(zmq_errno()));
    msgpack_sbuffer_destroy(&frame.buf);
}

static void send_error(void *sock, const msgpack_object *game_id, const msgpack_object *seq, const char *code,
                       const char *fmt, ...) {
    char text[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    say("error %s sent to the referee: %s", code, text);
    Out o;
    begin(&o, "error", game_id, seq);
    put_str(&o, "code", code);
    put_str(&o, "message", text);
    finish(sock, &o);
}

/* --- incoming messages ------------------------------------------------------------------------ */

static const msgpack_object *field(const msgpack_object *map, const char *key) {
    size_t len = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len && !memcmp(k->via.str.ptr, key, len))
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static int is_int(const msgpack_object *o) {
    return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
}

/* Copies a str field into out (NUL-terminated). 0: done; -1: absent; -2: not a str or too long. */
static int get_str(const msgpack_object *map, const char *key, char *out, size_t cap) {
    const msgpack_object *o = field(map, key);
    if (!o) return -1;
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap || memchr(o->via.str.ptr, 0, o->via.str.size))
        return -2;
    memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = '\0';
    return 0;
}

/* --- the engine ----------------------------------------------------------------------------- */

typedef struct {
    uint64_t seed;   /* --seed */
    uint64_t rng;    /* this game's generator: --seed mixed with the game's dice stream */
    int games, wins; /* for the log */
    int seat;
} Engine;

static uint64_t hash(const char *text) { /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *text; text++) h = (h ^ (uint8_t)*text) * 0x100000001b3ULL;
    return h;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void on_new_game(void *sock, Engine *e, const msgpack_object *m, const msgpack_object *gid,
                        const msgpack_object *seq, const char *game_id) {
    char game[64];
    const msgpack_object *seat = field(m, "seat");
    if (get_str(m, "game", game, sizeof game) != 0 || !seat || !is_int(seat)) {
        send_error(sock, gid, seq, "malformed", "new_game needs `game` (string) and `seat` (int)");
        return;
    }
    if (strcmp(game, "einstein")) { /* our hello said games=["einstein"]: the referee should not ask */
        send_error(sock, gid, seq, "unexpected", "this engine plays einstein, not %s", game);
        return;
    }
    e->seat = (int)seat->via.i64;
    /* Reproducible: the game's dice stream (match id and game number; the game id has a random
     * part) mixed with --seed and the seat, so the same seeds replay the same game. */
    char stream[300] = "", match_id[256] = "";
    const char *key = stream;
    const msgpack_object *number = field(m, "game_number");
    if (get_str(m, "dice_stream", stream, sizeof stream) != 0 || !stream[0]) {
        if (get_str(m, "match_id", match_id, sizeof match_id) == 0 && match_id[0])
            snprintf(stream, sizeof stream, "%s|%" PRId64, match_id, number && is_int(number) ? number->via.i64 : 0);
        else
            key = game_id;
    }
    e->rng = e->seed ^ hash(key) ^ (uint64_t)(e->seat + 1) * 0x9e3779b97f4a7c15ULL;
    Out o;
    begin(&o, "ready", gid, seq);
    finish(sock, &o);
}

static void on_request(void *sock, Engine *e, const msgpack_object *m, const msgpack_object *gid,
                       const msgpack_object *seq, double received_ms) {
    char kind[32], text[256], why[100], move[8];
    const msgpack_object *seat = field(m, "seat");
    if (get_str(m, "kind", kind, sizeof kind) != 0 || get_str(m, "position", text, sizeof text) != 0 || !seat ||
        !is_int(seat)) {
        send_error(sock, gid, seq, "malformed", "request needs `kind` and `position` (strings) and `seat` (int)");
        return;
    }
    Position pos;
    if (ein_parse(text, &pos, why, sizeof why) != 0) {
        send_error(sock, gid, seq, "malformed", "position '%s': %s", text, why);
        return;
    }
    Out o;
    if (!strcmp(kind, "setup")) {
        int mine = seat->via.i64 == 0 ? pos.seat0 : !pos.seat0;
        ein_setup(mine, &e->rng, move);
        begin(&o, "reply", gid, seq);
        put_str(&o, "move", move);
    } else if (!strcmp(kind, "move")) {
        double score;
        int nodes;
        if (ein_choose(&pos, &e->rng, move, &score, &nodes) != 0) {
            send_error(sock, gid, seq, "unexpected", "no legal move in '%s' (no die, or no cube to move)", text);
            return;
        }
        begin(&o, "reply", gid, seq);
        put_str(&o, "move", move);
        put_key(&o, "info"); /* optional search information, recorded beside the move */
        Out info;            /* an embedded map, written the same way */
        begin_map(&info);
        put_key(&info, "score");
        msgpack_pack_double(&info.pk, score);
        put_int(&info, "nodes", nodes);
        put_int(&info, "depth", 1);
        put_int(&info, "time_ms", (int64_t)(now_ms() - received_ms));
        end_map(&o, &info);
    } else {
        send_error(sock, gid, seq, "unexpected", "unknown decision kind '%s'", kind);
        return;
    }
    finish(sock, &o);
}

static void on_game_over(Engine *e, const msgpack_object *m, const char *game_id) {
    char reason[64] = "?", detail[300] = "";
    get_str(m, "reason", reason, sizeof reason);
    get_str(m, "detail", detail, sizeof detail);
    const msgpack_object *returns = field(m, "returns");
    double mine = 0;
    if (returns && returns->type == MSGPACK_OBJECT_ARRAY && e->seat >= 0 &&
        (uint32_t)e->seat < returns->via.array.size) {
        const msgpack_object *r = &returns->via.array.ptr[e->seat];
        mine = r->type == MSGPACK_OBJECT_FLOAT64 || r->type == MSGPACK_OBJECT_FLOAT32 ? r->via.f64
             : r->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (double)r->via.u64
             : r->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? (double)r->via.i64 : 0;
    }
    e->games++;
    e->wins += mine > 0;
    say("game %s over: %s (%s%s%s); %d of %d won", game_id, mine > 0 ? "won" : mine < 0 ? "lost" : "drawn", reason,
        detail[0] ? ": " : "", detail, e->wins, e->games);
}

/* Handles one frame. Returns 0 to go on, 1 on quit, -1 when the referee rejected us. */
static int handle(void *sock, Engine *e, const char *data, size_t size) {
    double received_ms = now_ms();
    msgpack_unpacked msg;
    msgpack_unpacked_init(&msg);
    size_t offset = 0;
    int result = 0;
    msgpack_unpack_return rc = msgpack_unpack_next(&msg, data, size, &offset);
    const msgpack_object *m = &msg.data;
    char type[32], game_id[1024] = "";
    if (rc != MSGPACK_UNPACK_SUCCESS || offset != size) {
        send_error(sock, NULL, NULL, "malformed", size == 0 ? "empty message"
                   : rc == MSGPACK_UNPACK_SUCCESS ? "not msgpack: trailing bytes after the first value"
                   : "not msgpack");
        goto done;
    }
    if (m->type != MSGPACK_OBJECT_MAP) {
        send_error(sock, NULL, NULL, "malformed", "invalid message: not a map");
        goto done;
    }
    const msgpack_object *gid = field(m, "game_id"), *seq = field(m, "seq");
    if (get_str(m, "type", type, sizeof type) != 0 || (gid && gid->type != MSGPACK_OBJECT_STR) ||
        (seq && !is_int(seq))) {
        send_error(sock, NULL, NULL, "malformed", "invalid message: `type` must be a string, `game_id` a string, "
                   "`seq` an int");
        goto done;
    }
    get_str(m, "game_id", game_id, sizeof game_id); /* for the log and seeding; echoed as received */
    if (!strcmp(type, "request")) on_request(sock, e, m, gid, seq, received_ms);
    else if (!strcmp(type, "new_game")) on_new_game(sock, e, m, gid, seq, game_id);
    else if (!strcmp(type, "ping")) {
        Out o;
        begin(&o, "pong", gid, seq);
        finish(sock, &o);
    } else if (!strcmp(type, "game_over")) on_game_over(e, m, game_id);
    else if (!strcmp(type, "welcome")) say("welcome: the handshake is accepted");
    else if (!strcmp(type, "quit")) result = 1;
    else if (!strcmp(type, "reject")) {
        char reason[300] = "";
        get_str(m, "reason", reason, sizeof reason);
        say("rejected by the referee: %s", reason);
        result = -1;
    } else if (!strcmp(type, "error")) {
        char message[300] = "";
        get_str(m, "message", message, sizeof message);
        say("the referee reports an error: %s", message);
    } else if (strcmp(type, "pong")) {
        send_error(sock, gid, seq, "unexpected", "unexpected message type '%s'", type);
    }
done:
    msgpack_unpacked_destroy(&msg);
    return result;
}

static void send_hello(void *sock, const char *secret) {
    Out o;
    begin(&o, "hello", NULL, NULL);
    put_str(&o, "name", engine_name);
    put_str(&o, "author", "arbiter project");
    put_str(&o, "version", "1");
    put_int(&o, "protocol_version", PROTOCOL_VERSION);
    put_key(&o, "games");
    msgpack_pack_array(&o.pk, 1);
    msgpack_pack_str_with_body(&o.pk, "einstein", 8);
    put_key(&o, "wants_legal_moves"); /* we list our own moves; the position text is all we read */
    msgpack_pack_false(&o.pk);
    put_key(&o, "wants_state");
    msgpack_pack_false(&o.pk);
    put_str(&o, "secret", secret);
    finish(sock, &o);
}

/* What the socket monitor tells about the connection. */
typedef struct {
    int curve;
    int connected; /* a handshake has succeeded and the connection is up */
    int dropped;   /* a connection was up and went down: the next one needs a new hello */
    int failures;  /* handshakes failed in a row */
} Link;

#define MAX_FAILED_HANDSHAKES 5

/* Handles a monitor event. Returns 1 when hello must be sent again (a new connection after a
 * lost one), -1 when there is no point going on (our key refused, or the handshake keeps failing:
 * a wrong --server-key), else 0. */
static int on_event(void *monitor, Link *link) {
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, monitor, 0) < 0) return 0;
    uint16_t event = 0;
    uint32_t value = 0;
    if (zmq_msg_size(&frame) >= 6) {
        memcpy(&event, zmq_msg_data(&frame), 2);
        memcpy(&value, (char *)zmq_msg_data(&frame) + 2, 4);
    }
    while (zmq_msg_more(&frame)) zmq_msg_recv(&frame, monitor, 0); /* the endpoint */
    zmq_msg_close(&frame);
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        link->connected = 1;
        link->failures = 0;
        if (link->curve) say("connected; CURVE handshake done");
        if (link->dropped) {
            link->dropped = 0;
            say("reconnected: hello again");
            return 1;
        }
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        say("the referee refused this engine's key (ZAP status %u): is its public key in the event's roster?", value);
        return -1;
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL || event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
        if (++link->failures == 1 || link->failures == MAX_FAILED_HANDSHAKES)
            say("handshake failed (code %u)%s", value,
                link->curve ? ": is --server-key the referee's public key?" : "");
        if (link->failures == MAX_FAILED_HANDSHAKES) {
            say("giving up after %d failed handshakes in a row", MAX_FAILED_HANDSHAKES);
            return -1;
        }
    } else if (event == ZMQ_EVENT_DISCONNECTED && link->connected) {
        say("connection lost; reconnecting");
        link->connected = 0;
        link->dropped = 1;
    }
    return 0;
}

static void on_signal(int sig) { (void)sig; interrupted = 1; }

static const char *option_value(int argc, char **argv, int *i, const char *flag) {
    size_t len = strlen(flag);
    if (!strncmp(argv[*i], flag, len) && argv[*i][len] == '=') return argv[*i] + len + 1;
    if (*i + 1 >= argc) usage_error("%s needs a value", flag);
    return argv[++*i];
}

static int is_flag(const char *arg, const char *flag) {
    size_t len = strlen(flag);
    return !strncmp(arg, flag, len) && (arg[len] == '\0' || arg[len] == '=');
}

int main(int argc, char **argv) {
    const char *endpoint = NULL, *server_key_file = NULL, *key_file = NULL;
    Engine e = {.seat = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(USAGE, stdout); return 0; }
        else if (is_flag(a, "--connect")) endpoint = option_value(argc, argv, &i, "--connect");
        else if (is_flag(a, "--name")) engine_name = option_value(argc, argv, &i, "--name");
        else if (is_flag(a, "--server-key")) server_key_file = option_value(argc, argv, &i, "--server-key");
        else if (is_flag(a, "--key")) key_file = option_value(argc, argv, &i, "--key");
        else if (is_flag(a, "--seed")) {
            const char *v = option_value(argc, argv, &i, "--seed");
            char *end;
            errno = 0;
            e.seed = strtoull(v, &end, 10);
            if (errno || !*v || *end || *v == '-') usage_error("--seed %s: expected a whole number", v);
        } else if (a[0] == '-') usage_error("unknown option %s (see --help)", a);
        else if (!endpoint) endpoint = a;
        else usage_error("unexpected argument %s (see --help)", a);
    }
    if (!endpoint) endpoint = getenv("ARBITER_ENDPOINT");
    if (!endpoint || !*endpoint) usage_error("no endpoint: give --connect ENDPOINT or set ARBITER_ENDPOINT");
    if (!server_key_file != !key_file) usage_error("CURVE needs both --server-key REFEREE.pub and --key OWN.key");

    char secret[256] = "";
    const char *secret_file = getenv("ARBITER_SECRET_FILE");
    if (secret_file && *secret_file) { /* the session secret: the file's text, white space stripped */
        FILE *f = fopen(secret_file, "r");
        if (!f) usage_error("ARBITER_SECRET_FILE %s: cannot read it: %s", secret_file, strerror(errno));
        size_t n = fread(secret, 1, sizeof secret - 1, f);
        fclose(f);
        secret[n] = '\0';
        char *start = secret + strspn(secret, " \t\r\n");
        size_t len = strcspn(start, " \t\r\n");
        memmove(secret, start, len);
        secret[len] = '\0';
    }

    void *ctx = zmq_ctx_new();
    void *sock = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    int64_t max_size = MAX_MESSAGE;
    zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max_size, sizeof max_size);
    int curve = server_key_file != NULL;
    if (curve) {
        if (!zmq_has("curve")) usage_error("--server-key: this libzmq was built without CURVE support");
        char server[KEY_LEN + 1], public[KEY_LEN + 1], secret_key[KEY_LEN + 1];
        read_key("--server-key", server_key_file, "public", server);
        check_private("--key", key_file);
        read_key("--key", key_file, "public", public);
        read_key("--key", key_file, "secret", secret_key);
        /* Z85 text form: 41 bytes with the terminating NUL */
        zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, server, KEY_LEN + 1);
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, public, KEY_LEN + 1);
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, secret_key, KEY_LEN + 1);
        memset(secret_key, 0, sizeof secret_key);
    }
    /* the monitor says when a handshake succeeds or fails, and when the connection drops */
    zmq_socket_monitor(sock, "inproc://engine-monitor",
                       ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED |
                       ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    void *monitor = zmq_socket(ctx, ZMQ_PAIR);
    zmq_setsockopt(monitor, ZMQ_LINGER, &zero, sizeof zero);
    zmq_connect(monitor, "inproc://engine-monitor");
    if (zmq_connect(sock, endpoint) != 0) usage_error("endpoint %s: %s", endpoint, zmq_strerror(zmq_errno()));

    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    say("connecting to %s%s", endpoint, curve ? " with CURVE" : "");
    send_hello(sock, secret); /* at once: the referee's handshake timeout is running */
    int status = 0;
    Link link = {.curve = curve};
    zmq_pollitem_t items[2] = {{sock, 0, ZMQ_POLLIN, 0}, {monitor, 0, ZMQ_POLLIN, 0}};
    while (!interrupted) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (zmq_errno() == EINTR) continue;
            say("poll failed: %s", zmq_strerror(zmq_errno()));
            status = 1;
            break;
        }
        if (items[1].revents & ZMQ_POLLIN) {
            int r = on_event(monitor, &link);
            if (r < 0) { status = 1; break; }
            if (r > 0) send_hello(sock, secret);
        }
        if (!(items[0].revents & ZMQ_POLLIN)) continue;
        zmq_msg_t frame;
        zmq_msg_init(&frame);
        if (zmq_msg_recv(&frame, sock, 0) < 0) { zmq_msg_close(&frame); continue; }
        int parts = 1;
        while (zmq_msg_more(&frame)) { zmq_msg_recv(&frame, sock, 0); parts++; }
        int r = 0;
        if (parts > 1) send_error(sock, NULL, NULL, "malformed", "expected one frame per message, got %d", parts);
        else r = handle(sock, &e, zmq_msg_data(&frame), zmq_msg_size(&frame));
        zmq_msg_close(&frame);
        if (r == 1) break;                     /* quit */
        if (r < 0) { status = 1; break; }      /* reject */
    }
    if (interrupted) { say("interrupted"); status = 1; }
    say("done: %d games, %d won", e.games, e.wins);
    zmq_socket_monitor(sock, NULL, 0);
    zmq_close(monitor);
    zmq_close(sock);
    zmq_ctx_term(ctx);
    return status;
}
