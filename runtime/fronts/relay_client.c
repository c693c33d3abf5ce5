/* relay_client.c: the native relay client (docs/agents.md, "Which client runs").
 *
 * The per-event command of an adopted agent, built at install time into the user's private
 * state dir (runtime/fronts/relay_build.py). It does exactly the Python relay's fast path
 * (runtime/fronts/relay.py) and nothing else: read the agent's hook input, connect to the
 * user's serve over serve.sock, check that the process at the other end runs as the user, send
 * the request of relay protocol v3, follow the acknowledgement and heartbeats, print the
 * answer, exit 0. Everything else -- no serve, a socket or directory that is not the user's, a
 * dead serve (recorded or found), an input it cannot frame, a reply that is no answer, the
 * deadline -- is handed over to the Python relay (execed with the same arguments and the input
 * on a new stdin, plus --handed saying what this client saw), which owns those rules: one
 * implementation of each.
 *
 * C99, the standard library and POSIX only. Built with -DTRIOHOOKS_PYTHON, -DTRIOHOOKS_RELAY_DIR
 * and -DTRIOHOOKS_BOOT as C string literals: the interpreter, the directory of relay.py and
 * how to start it, which this client hands over to.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* struct ucred, SO_PEERCRED */
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef TRIOHOOKS_PYTHON
#error "build with -DTRIOHOOKS_PYTHON=<the interpreter, a C string literal>"
#endif
#ifndef TRIOHOOKS_RELAY_DIR
#error "build with -DTRIOHOOKS_RELAY_DIR=<the directory of relay.py, a C string literal>"
#endif
/* How the Python relay is started (spec.RELAY_BOOT): python -I -S -c BOOT DIR ARGS, relay.py
 * imported from DIR through its __pycache__ (written at install), so no start compiles it. */
#ifndef TRIOHOOKS_BOOT
#error "build with -DTRIOHOOKS_BOOT=<spec.RELAY_BOOT, a C string literal>"
#endif

extern char **environ;

/* The values of runtime/fronts/relay.py (a test holds them equal). */
#define PROTOCOL "v3"
#define SOCKET_NAME "serve.sock"
#define DEAD_NAME "serve.dead"
#define LOOP_VAR "TRIOHOOKS_RELAY"
#define ENV_LENGTH_HEADER "X-Triohooks-Env-Length"
#define MAX_INPUT_BYTES (16L * 1024 * 1024)
#define MAX_ANSWER_BYTES (16L * 1024 * 1024)
#define MAX_HEAD_BYTES 65536
#define CONNECT_TIMEOUT_S 0.5
#define SILENCE_S 2.0
#define DEADLINE_MARGIN_S 2.0
#define DEFAULT_TIMEOUT_S 60.0
static const char BEAT[] = "HTTP/1.1 102 Processing\r\n\r\n";
#define BEAT_LEN (sizeof BEAT - 1)
static const char *const AGENTS[] = {"claude", "gemini", "codex", "qwen", "copilot", "cursor", "agy"};

static int g_argc;
static char **g_argv;
static double g_started;
static char *g_input;
static size_t g_input_len;
/* The parsed arguments (when they parse). */
static int g_parsed;
static const char *g_agent, *g_event, *g_scope;
static double g_timeout = DEFAULT_TIMEOUT_S;
/* The connection to serve, once made (closed before a hand-over: nothing inherits it). */
static int g_fd = -1;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Exec the Python relay with the arguments this client was given (or, when they parsed, the
 * same with --timeout the time left and --handed HANDED), the input on a new stdin. */
static void hand_over(const char *handed, int keep_timeout) {
    char timeout_text[64];
    char **args = calloc((size_t)g_argc + 16, sizeof *args);
    int n = 0, p[2];
    size_t off = 0;
    if (args == NULL) {
        fputs("triohooks-relay: out of memory\n", stderr);
        exit(2);
    }
    args[n++] = TRIOHOOKS_PYTHON;
    args[n++] = "-I";
    args[n++] = "-S";
    args[n++] = "-c";
    args[n++] = TRIOHOOKS_BOOT;
    args[n++] = TRIOHOOKS_RELAY_DIR;
    if (!g_parsed) {
        for (int i = 1; i < g_argc; i++) args[n++] = g_argv[i];
    } else {
        double left = g_timeout - (now() - g_started);
        args[n++] = (char *)g_agent;
        if (g_event) {
            args[n++] = "--event";
            args[n++] = (char *)g_event;
        }
        if (g_scope) {
            args[n++] = "--scope";
            args[n++] = (char *)g_scope;
        }
        snprintf(timeout_text, sizeof timeout_text, "%.17g",
                 keep_timeout ? g_timeout : (left > 0.001 ? left : 0.001));
        args[n++] = "--timeout";
        args[n++] = timeout_text;
        if (handed) {
            args[n++] = "--handed";
            args[n++] = (char *)handed;
        }
    }
    args[n] = NULL;
    if (g_fd >= 0) close(g_fd);
    if (pipe(p) != 0) {
        fprintf(stderr, "triohooks-relay: cannot hand the event over: pipe: %s\n", strerror(errno));
        exit(2);
    }
    fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
    while (off < g_input_len) { /* what fits the pipe now; a writer child for the rest */
        ssize_t w = write(p[1], g_input + off, g_input_len - off);
        if (w > 0) off += (size_t)w;
        else if (w < 0 && errno == EINTR) continue;
        else break;
    }
    if (off < g_input_len) {
        pid_t child = fork();
        if (child < 0) {
            fprintf(stderr, "triohooks-relay: cannot hand the event over: fork: %s\n",
                    strerror(errno));
            exit(2);
        }
        if (child == 0) {
            close(p[0]);
            signal(SIGPIPE, SIG_DFL);
            fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) & ~O_NONBLOCK);
            while (off < g_input_len) {
                ssize_t w = write(p[1], g_input + off, g_input_len - off);
                if (w > 0) off += (size_t)w;
                else if (!(w < 0 && errno == EINTR)) break;
            }
            _exit(0);
        }
    }
    close(p[1]);
    if (dup2(p[0], 0) < 0) {
        fprintf(stderr, "triohooks-relay: cannot hand the event over: dup2: %s\n", strerror(errno));
        exit(2);
    }
    if (p[0] != 0) close(p[0]);
    signal(SIGPIPE, SIG_DFL);
    execv(TRIOHOOKS_PYTHON, args);
    fprintf(stderr, "triohooks-relay: cannot run the Python relay %s: %s\n", TRIOHOOKS_PYTHON,
            strerror(errno));
    exit(2);
}

/* "the server answered ...": said on stderr as the Python relay says it, then handed over. */
static void unexpected(const char *what) {
    fprintf(stderr, "triohooks-relay: server: %s; running the hooks here\n", what);
    hand_over("unexpected", 0);
}

static int parse_args(void) {
    size_t known = sizeof AGENTS / sizeof *AGENTS, a;
    if (g_argc < 2) return 0;
    for (a = 0; a < known && strcmp(g_argv[1], AGENTS[a]) != 0; a++) {}
    if (a == known) return 0;
    g_agent = g_argv[1];
    for (int i = 2; i < g_argc; i += 2) {
        const char *option = g_argv[i], *value;
        if (i + 1 >= g_argc) return 0;
        value = g_argv[i + 1];
        if (strcmp(option, "--timeout") == 0) {
            /* digits, optionally a fraction: anything else Python's float() reads its own way */
            const char *c = value;
            int digits = 0, dot = 0;
            for (; *c; c++) {
                if (*c >= '0' && *c <= '9') digits++;
                else if (*c == '.' && !dot) dot = 1;
                else return 0;
            }
            if (!digits) return 0;
            g_timeout = strtod(value, NULL);
        } else if (strcmp(option, "--event") == 0) {
            const char *c = value;
            if (!*c) return 0;
            for (; *c; c++)
                if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z'))) return 0;
            g_event = value;
        } else if (strcmp(option, "--scope") == 0) {
            if (strcmp(value, "user") != 0 && strcmp(value, "project") != 0) return 0;
            g_scope = value;
        } else {
            return 0;
        }
    }
    return g_timeout > 0;
}

static void read_input(void) {
    size_t cap = 65536;
    g_input = malloc(cap);
    if (g_input == NULL) {
        fputs("triohooks-relay: out of memory\n", stderr);
        exit(2);
    }
    for (;;) {
        ssize_t r;
        if (g_input_len == cap) {
            char *grown;
            if (cap > (size_t)MAX_INPUT_BYTES) return; /* read MAX + 1: too large, said there */
            cap *= 2;
            if (cap > (size_t)MAX_INPUT_BYTES + 1) cap = (size_t)MAX_INPUT_BYTES + 1;
            grown = realloc(g_input, cap);
            if (grown == NULL) {
                fputs("triohooks-relay: out of memory\n", stderr);
                exit(2);
            }
            g_input = grown;
        }
        r = read(0, g_input + g_input_len, cap - g_input_len);
        if (r > 0) g_input_len += (size_t)r;
        else if (r < 0 && errno == EINTR) continue;
        else return; /* end (or an error: the Python relay reads what is left) */
    }
}

/* A string made of parts, on the heap (NULL: out of memory, handed over). */
static char *join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *out = malloc(la + lb + 1);
    if (out == NULL) hand_over(NULL, 0);
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
    return out;
}

static char *rstrip_slashes(const char *s) {
    char *out = join(s, "");
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/') out[--n] = '\0';
    return out;
}

static int blank(const char *s) {
    for (; *s; s++)
        if (!strchr(" \t\n\v\f\r\x1c\x1d\x1e\x1f", *s)) return 0;
    return 1;
}

/* relay.state_dir; NULL when HOME is unknown (the Python relay asks the password database). */
static char *state_dir(void) {
    const char *explicit_dir = getenv("TRIOHOOKS_STATE_DIR");
    const char *home = getenv("HOME");
    if (explicit_dir && *explicit_dir) return join(explicit_dir, "");
    if (!home || !*home) return NULL;
#if defined(__APPLE__)
    return join(rstrip_slashes(home), "/Library/Application Support/triohooks");
#else
    {
        const char *xdg = getenv("XDG_STATE_HOME");
        if (xdg && !blank(xdg)) return join(rstrip_slashes(xdg), "/triohooks");
    }
    return join(rstrip_slashes(home), "/.local/state/triohooks");
#endif
}

/* relay.serve_socket's checks: the socket's path when only the user can have put it there. */
static char *serve_socket(const char *directory) {
    struct stat st, up;
    uid_t me = getuid();
    char *parent = rstrip_slashes(directory), *slash = strrchr(parent, '/'), *path;
    static char root[] = "/";
    if (lstat(directory, &st) != 0) return NULL;
    if (!S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & 022)) return NULL;
    if (slash == NULL || slash == parent) parent = root;
    else *slash = '\0';
    if (stat(parent, &up) != 0) return NULL;
    if (((up.st_mode & 002) && !(up.st_mode & 01000)) || ((up.st_mode & 020) && up.st_uid != me))
        return NULL;
    path = join(directory, "/" SOCKET_NAME);
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != me) return NULL;
    return path;
}

static int connect_within(const char *path) {
    struct sockaddr_un addr;
    struct pollfd pfd;
    int fd, err = 0;
    socklen_t len = sizeof err;
    if (strlen(path) >= sizeof addr.sun_path) return -1;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) return fd;
    if (errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    pfd.fd = fd;
    pfd.events = POLLOUT;
    if (poll(&pfd, 1, (int)(CONNECT_TIMEOUT_S * 1000)) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The uid and pid of the process at the other end (-1: the OS does not tell; pid 0: unknown).
 * Returns 0, or -1 when the OS should tell and did not. */
static int peer(int fd, long *uid, long *pid) {
    *uid = -1;
    *pid = 0;
#if defined(SO_PEERCRED)
    {
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
        *uid = (long)cred.uid;
        *pid = (long)cred.pid;
    }
#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
    {
        uid_t euid;
        gid_t egid;
        if (getpeereid(fd, &euid, &egid) != 0) return -1;
        *uid = (long)euid;
#if defined(LOCAL_PEERPID)
        {
            pid_t p = 0;
            socklen_t len = sizeof p;
            if (getsockopt(fd, 0 /* SOL_LOCAL */, LOCAL_PEERPID, &p, &len) == 0) *pid = (long)p;
        }
#endif
    }
#else
    (void)fd;
#endif
    return 0;
}

static char g_handed[64];

/* serve said nothing for SILENCE_S: dead (WHY: silent or unacknowledged), with its pid. */
static void dead(const char *why, long pid) {
    snprintf(g_handed, sizeof g_handed, "%s:%ld", why, pid > 0 ? pid : 0L);
    hand_over(g_handed, 0);
}

static int send_all(int fd, const char *data, size_t len, long pid) {
    size_t off = 0;
    while (off < len) {
#if defined(MSG_NOSIGNAL)
        ssize_t w = send(fd, data + off, len - off, MSG_NOSIGNAL);
#else
        ssize_t w = send(fd, data + off, len - off, 0);
#endif
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd;
            int ready;
            pfd.fd = fd;
            pfd.events = POLLOUT;
            ready = poll(&pfd, 1, (int)(SILENCE_S * 1000));
            if (ready == 0) dead("unacknowledged", pid); /* a stopped serve, its buffer full */
        } else if (!(w < 0 && errno == EINTR)) {
            return -1;
        }
    }
    return 0;
}

static size_t find(const char *hay, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(hay + i, needle, n) == 0) return i;
    return (size_t)-1;
}

/* The reply so far, and reading more of it within the silence rule and the deadline. */
static char *g_buf;
static size_t g_len, g_cap;

static void receive(int fd, double deadline, int heard, long pid) {
    for (;;) {
        double remaining = deadline - now(), wait;
        struct pollfd pfd;
        int ready;
        ssize_t r;
        if (remaining <= 0) hand_over("late", 1);
        wait = remaining < SILENCE_S ? remaining : SILENCE_S;
        pfd.fd = fd;
        pfd.events = POLLIN;
        ready = poll(&pfd, 1, (int)(wait * 1000) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {
            if (remaining <= SILENCE_S) hand_over("late", 1);
            dead(heard ? "silent" : "unacknowledged", pid);
        }
        if (g_len == g_cap) {
            char *grown;
            g_cap = g_cap ? g_cap * 2 : 65536;
            grown = realloc(g_buf, g_cap);
            if (grown == NULL) unexpected("out of memory reading the answer");
            g_buf = grown;
        }
        r = recv(fd, g_buf + g_len, g_cap - g_len, 0);
        if (r > 0) {
            g_len += (size_t)r;
            return;
        }
        if (r == 0) unexpected("the server closed the connection");
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) unexpected(strerror(errno));
    }
}

static char *env_block(size_t *size) {
    size_t total = sizeof LOOP_VAR "=1", count = 0, n = 0;
    char *out;
    for (char **e = environ; *e; e++) {
        total += strlen(*e) + 1;
        count++;
    }
    out = malloc(total);
    if (out == NULL) hand_over(NULL, 0);
    for (size_t i = 0; i < count; i++) {
        const char *entry = environ[i], *eq = strchr(entry, '=');
        int seen = 0;
        if (eq == NULL) continue; /* no NAME=VALUE: not in the environment Python reads */
        for (size_t j = 0; j < i && !seen; j++) /* a repeated name: its first entry only */
            seen = strncmp(environ[j], entry, (size_t)(eq - entry) + 1) == 0;
        if (seen) continue;
        memcpy(out + n, entry, strlen(entry));
        n += strlen(entry);
        out[n++] = '\0';
    }
    memcpy(out + n, LOOP_VAR "=1", sizeof LOOP_VAR "=1" - 1);
    *size = n + sizeof LOOP_VAR "=1" - 1;
    return out;
}

int main(int argc, char **argv) {
    const char *loop = getenv(LOOP_VAR);
    char *directory, *path, *env, *head, *status_end;
    char target[256], request_head[512], said[160];
    size_t env_len, at, head_len, length;
    long uid, pid;
    double deadline;
    int fd, heard = 0, have_length = 0;
    struct stat st;

    g_started = now();
    g_argc = argc;
    g_argv = argv;
    g_parsed = parse_args();
    read_input();
    deadline = g_started + (g_timeout - DEADLINE_MARGIN_S > 0.5 ? g_timeout - DEADLINE_MARGIN_S
                                                                : 0.5);
    if (!g_parsed || (loop && *loop) || g_input_len > (size_t)MAX_INPUT_BYTES) hand_over(NULL, 0);
    directory = state_dir();
    if (directory == NULL) hand_over(NULL, 0);
    path = serve_socket(directory);
    if (path == NULL || lstat(join(directory, "/" DEAD_NAME), &st) == 0) hand_over(NULL, 0);
    g_fd = fd = connect_within(path);
    if (fd < 0) hand_over(NULL, 0);
    if (peer(fd, &uid, &pid) != 0 || (uid >= 0 && uid != (long)getuid())) hand_over(NULL, 0);

    env = env_block(&env_len);
    /* relay.hook_path: /<agent>/v3/hook[?scope=S][&event=E] */
    if (snprintf(target, sizeof target, "/%s/" PROTOCOL "/hook%s%s%s%s%s%s", g_agent,
                 g_scope || g_event ? "?" : "", g_scope ? "scope=" : "", g_scope ? g_scope : "",
                 g_scope && g_event ? "&" : "", g_event ? "event=" : "", g_event ? g_event : "") >=
        (int)sizeof target)
        hand_over(NULL, 0);
    snprintf(request_head, sizeof request_head,
             "POST %s HTTP/1.1\r\nHost: triohooks\r\nContent-Type: application/json\r\n"
             ENV_LENGTH_HEADER ": %lu\r\nContent-Length: %lu\r\nConnection: close\r\n\r\n",
             target, (unsigned long)env_len, (unsigned long)(env_len + g_input_len));
#if !defined(MSG_NOSIGNAL)
    signal(SIGPIPE, SIG_IGN); /* a serve gone mid-request: EPIPE, not death (reset at exec) */
#endif
    if (send_all(fd, request_head, strlen(request_head), pid) != 0 ||
        send_all(fd, env, env_len, pid) != 0 || send_all(fd, g_input, g_input_len, pid) != 0)
        unexpected(strerror(errno));

    for (;;) { /* the acknowledgement, then a heartbeat every 0.5 s, then the answer */
        while ((at = find(g_buf, g_len, "\r\n\r\n")) == (size_t)-1) {
            if (g_len > MAX_HEAD_BYTES) unexpected("the server's answer head is too large");
            receive(fd, deadline, heard, pid);
        }
        head_len = at + 4;
        if (head_len != BEAT_LEN || memcmp(g_buf, BEAT, BEAT_LEN) != 0) break;
        heard = 1;
        memmove(g_buf, g_buf + head_len, g_len - head_len);
        g_len -= head_len;
    }
    g_buf[at] = '\0';
    head = g_buf;
    status_end = strstr(head, "\r\n");
    if (status_end) *status_end = '\0';
    {
        const char *code = strchr(head, ' ');
        int is_404 = code && strncmp(code + 1, "404", 3) == 0 && (code[4] == ' ' || !code[4]);
        int is_200 = code && strncmp(code + 1, "200", 3) == 0 && (code[4] == ' ' || !code[4]);
        if (!heard && is_404) {
            snprintf(g_handed, sizeof g_handed, "older:%ld", pid > 0 ? pid : 0L);
            hand_over(g_handed, 0);
        }
        if (!is_200) {
            snprintf(said, sizeof said, "the server answered '%.100s'", head);
            unexpected(said);
        }
    }
    length = 0;
    for (char *line = status_end ? status_end + 2 : head + strlen(head); line && *line;) {
        char *next = strstr(line, "\r\n"), *colon, *name_end, *value;
        if (next) *next = '\0';
        colon = strchr(line, ':');
        if (colon) {
            name_end = colon;
            while (name_end > line && (name_end[-1] == ' ' || name_end[-1] == '\t')) name_end--;
            while (*line == ' ' || *line == '\t') line++;
            if ((size_t)(name_end - line) == 14 && strncasecmp(line, "content-length", 14) == 0) {
                size_t digits = 0, v = 0;
                char *c;
                value = colon + 1;
                while (*value == ' ' || *value == '\t') value++;
                for (c = value; *c >= '0' && *c <= '9'; c++) {
                    digits++;
                    if (v <= (size_t)MAX_ANSWER_BYTES) v = v * 10 + (size_t)(*c - '0');
                }
                while (*c == ' ' || *c == '\t') c++;
                if (digits && !*c) { /* (one that is not a number is passed over, as there) */
                    length = v;
                    have_length = 1;
                }
            }
        }
        line = next ? next + 2 : NULL;
    }
    if (!have_length || length > (size_t)MAX_ANSWER_BYTES)
        unexpected("the server's answer has no usable Content-Length");
    memmove(g_buf, g_buf + head_len, g_len - head_len);
    g_len -= head_len;
    while (g_len < length) receive(fd, deadline, 1, pid);
    close(fd);
    {
        size_t off = 0, total = length + 1;
        if (g_cap < total && (g_buf = realloc(g_buf, total)) == NULL) {
            fputs("triohooks-relay: out of memory\n", stderr);
            return 2;
        }
        g_buf[length] = '\n';
        while (off < total) {
            ssize_t w = write(1, g_buf + off, total - off);
            if (w > 0) off += (size_t)w;
            else if (!(w < 0 && errno == EINTR)) {
                fprintf(stderr, "triohooks-relay: cannot write the answer: %s\n", strerror(errno));
                return 2;
            }
        }
    }
    return 0;
}
