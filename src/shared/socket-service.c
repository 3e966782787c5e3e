/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "config-build.h"
#include "io-util.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "socket-service.h"
#include "time-util.h"
#include "strv.h"

struct SocketConnection {
        SocketService *service;
        SocketConnection *prev, *next;  /* service->connections, changed only by the event loop */
        /* under service->lock: */
        SocketConnection *queue_next;   /* waiting for a worker */
        int fd;
        uint64_t head_deadline;         /* CLOCK_MONOTONIC µs; 0: not reading a head */
        bool head_expired;
        bool finished;                  /* run() returned: the connection is ready to be freed */
};

/* A thread of the pool: it serves one queued connection after another, waits for the next while idle,
 * and ends (to be joined by the event loop) when more than workers_idle_max would wait, or at the end. */
typedef struct SocketWorker SocketWorker;
struct SocketWorker {
        SocketService *service;
        SocketWorker *prev, *next;      /* service->workers, changed only by the event loop */
        pthread_t thread;
        bool exited;                    /* under service->lock: the thread returned, join it */
};

struct SocketService {
        SocketServiceConfig config;
        sd_event *event;
        int listen_fds[SOCKET_SERVICE_LISTEN_FDS_MAX];
        char *listen_names[SOCKET_SERVICE_LISTEN_FDS_MAX];
        sd_event_source *listeners[SOCKET_SERVICE_LISTEN_FDS_MAX];
        size_t n_listeners;
        sd_event_source *idle_timer, *deadline_timer, *drain_timer, *wake_source;
        int wake_fd;                    /* eventfd: a worker ended, or started a head deadline */
        SocketConnection *connections;  /* changed only by the event loop */
        unsigned n_connections;
        SocketWorker *workers;          /* changed only by the event loop */

        pthread_mutex_t lock;
        pthread_cond_t work;            /* a connection was queued, or the workers are to end */
        /* under lock: */
        SocketConnection *queue_head, *queue_tail;
        unsigned n_queued;
        unsigned n_workers;             /* started and not yet joined */
        unsigned n_idle;                /* workers not serving a connection (waiting, or about to take one) */
        unsigned workers_started;
        bool workers_end;               /* idle workers end instead of waiting */
        uint64_t deadline_armed;        /* when deadline_timer fires next; 0: off */
        atomic_bool stopping;           /* written under lock */
};

static void service_wake(SocketService *s) {
        uint64_t one = 1;

        if (write(s->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
                log_debug_errno(errno, "Waking the event loop failed, ignoring: %m");
}

static bool service_busy(SocketService *s) {
        return s->n_connections > 0 || (s->config.keeps_alive && s->config.keeps_alive(s, s->config.userdata));
}

void socket_service_update_idle(SocketService *s) {
        if (service_busy(s) || s->config.idle_usec == 0 || atomic_load(&s->stopping)) {
                (void) sd_event_source_set_enabled(s->idle_timer, SD_EVENT_OFF);
                return;
        }
        if (sd_event_source_get_enabled(s->idle_timer, NULL) > 0)
                return;         /* counting down already */
        (void) sd_event_source_set_time_relative(s->idle_timer, s->config.idle_usec);
        (void) sd_event_source_set_enabled(s->idle_timer, SD_EVENT_ONESHOT);
}

static int service_exit_if_drained(SocketService *s) {
        if (atomic_load(&s->stopping) && s->n_connections == 0)
                return sd_event_exit(s->event, 0);
        return 0;
}

static void connection_free(SocketService *s, SocketConnection *c) {
        LIST_REMOVE(s->connections, c);
        safe_close(c->fd);
        free(c);
        s->n_connections--;
}

/* Frees the connections that were served, then joins the workers that ended. In that order: a worker
 * marks its connection finished and itself exited (or idle) under one lock, so every worker whose
 * connection is freed here is joined here too, and what released() sees adds up. */
static void service_reap(SocketService *s) {
        bool any = false;

        for (SocketConnection *c = s->connections, *next; c; c = next) {
                bool finished;

                next = c->next;
                pthread_mutex_lock(&s->lock);
                finished = c->finished;
                pthread_mutex_unlock(&s->lock);
                if (!finished)
                        continue;
                connection_free(s, c);
                any = true;
        }
        for (SocketWorker *w = s->workers, *next; w; w = next) {
                bool exited;

                next = w->next;
                pthread_mutex_lock(&s->lock);
                exited = w->exited;
                pthread_mutex_unlock(&s->lock);
                if (!exited)
                        continue;
                (void) pthread_join(w->thread, NULL);
                LIST_REMOVE(s->workers, w);
                free(w);
                pthread_mutex_lock(&s->lock);
                s->n_workers--;
                pthread_mutex_unlock(&s->lock);
        }
        if (any && s->config.released)
                s->config.released(s, s->config.userdata);
}

/* Shuts the read side of every connection whose head deadline passed; arms the timer for the next. */
static void service_check_deadlines(SocketService *s) {
        uint64_t now = clock_usec(CLOCK_MONOTONIC), next = 0;

        pthread_mutex_lock(&s->lock);
        for (SocketConnection *c = s->connections; c; c = c->next) {
                if (c->head_deadline == 0)
                        continue;
                if (c->head_deadline <= now) {
                        c->head_deadline = 0;
                        c->head_expired = true;
                        (void) shutdown(c->fd, SHUT_RD);
                } else if (next == 0 || c->head_deadline < next)
                        next = c->head_deadline;
        }
        s->deadline_armed = next;
        pthread_mutex_unlock(&s->lock);

        if (next == 0) {
                (void) sd_event_source_set_enabled(s->deadline_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(s->deadline_timer, next);
        (void) sd_event_source_set_enabled(s->deadline_timer, SD_EVENT_ONESHOT);
}

static int on_wake(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        SocketService *s = userdata;
        uint64_t n;

        if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN)
                log_debug_errno(errno, "Reading the eventfd failed, ignoring: %m");
        service_reap(s);
        service_check_deadlines(s);
        socket_service_update_idle(s);
        return service_exit_if_drained(s);
}

static int on_deadline(sd_event_source *source, uint64_t usec, void *userdata) {
        service_check_deadlines(userdata);
        return 0;
}

static int on_idle(sd_event_source *source, uint64_t usec, void *userdata) {
        SocketService *s = userdata;

        if (service_busy(s))
                return 0;
        log_debug("Idle, exiting; the next connection starts the service again.");
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(s->event, 0);
}

static int on_drain_timeout(sd_event_source *source, uint64_t usec, void *userdata) {
        SocketService *s = userdata;

        log_debug("%u connections still open after the drain time, shutting them down.", s->n_connections);
        pthread_mutex_lock(&s->lock);
        for (SocketConnection *c = s->connections; c; c = c->next)
                (void) shutdown(c->fd, SHUT_RDWR);
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int on_signal(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata) {
        SocketService *s = userdata;
        int r;

        if (atomic_load(&s->stopping))
                return 0;
        log_debug("Stopping: no new connections, %u open ones finish their request.", s->n_connections);
        (void) sd_notify(false, "STOPPING=1");
        for (size_t i = 0; i < s->n_listeners; i++)
                (void) sd_event_source_set_enabled(s->listeners[i], SD_EVENT_OFF);

        pthread_mutex_lock(&s->lock);
        atomic_store(&s->stopping, true);
        /* between requests, or waiting for one: nothing under way is lost */
        for (SocketConnection *c = s->connections; c; c = c->next)
                if (c->head_deadline != 0) {
                        c->head_deadline = 0;
                        (void) shutdown(c->fd, SHUT_RD);
                }
        pthread_mutex_unlock(&s->lock);

        if (s->config.stop)
                s->config.stop(s, s->config.userdata);
        socket_service_update_idle(s);
        if (s->n_connections > 0) {
                r = sd_event_add_time_relative(s->event, &s->drain_timer, CLOCK_MONOTONIC, s->config.drain_usec, 0,
                                               on_drain_timeout, s);
                if (r < 0)
                        log_warning_errno(r, "Cannot arm the drain timer, waiting for the connections without: %m");
        }
        return service_exit_if_drained(s);
}

static void *worker_thread(void *userdata) {
        SocketWorker *w = userdata;
        SocketService *s = w->service;

        pthread_mutex_lock(&s->lock);
        for (;;) {
                SocketConnection *c;

                /* s->n_idle counts this worker here: on_accept() queued a connection for it, or will */
                while (!s->queue_head && !s->workers_end)
                        (void) pthread_cond_wait(&s->work, &s->lock);
                c = s->queue_head;
                if (!c)
                        break;          /* the end, and nothing left to serve */
                s->queue_head = c->queue_next;
                if (!s->queue_head)
                        s->queue_tail = NULL;
                c->queue_next = NULL;
                s->n_queued--;
                s->n_idle--;
                pthread_mutex_unlock(&s->lock);

                s->config.run(c, s->config.userdata);

                pthread_mutex_lock(&s->lock);
                c->finished = true;
                c->head_deadline = 0;
                if (s->n_idle >= s->config.workers_idle_max) {
                        /* enough wait already; every queued connection has an idle worker of its own */
                        w->exited = true;
                        pthread_mutex_unlock(&s->lock);
                        service_wake(s);
                        return NULL;
                }
                s->n_idle++;
                pthread_mutex_unlock(&s->lock);
                service_wake(s);
                pthread_mutex_lock(&s->lock);
        }
        s->n_idle--;
        w->exited = true;
        pthread_mutex_unlock(&s->lock);
        service_wake(s);
        return NULL;
}

/* Under s->lock: a worker more, counted idle, for the connection just queued. */
static int service_start_worker(SocketService *s) {
        pthread_attr_t attr;
        SocketWorker *w;
        int r;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->service = s;
        s->n_idle++;
        (void) pthread_attr_init(&attr);
        (void) pthread_attr_setstacksize(&attr, s->config.stack_size);
        r = pthread_create(&w->thread, &attr, worker_thread, w);
        (void) pthread_attr_destroy(&attr);
        if (r != 0) {
                s->n_idle--;
                free(w);
                return -r;
        }
        LIST_PREPEND(s->workers, w);
        s->n_workers++;
        s->workers_started++;
        return 0;
}

static int on_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        SocketService *s = userdata;
        _cleanup_close_ int cfd = -EBADF;
        SocketConnection *c;
        int r = 0;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | (s->config.accept ? SOCK_NONBLOCK : 0));
        if (cfd < 0) {
                if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                        log_warning_errno(errno, "accept() failed, ignoring: %m");
                return 0;
        }
        if (s->config.accept) {
                const char *name = "unknown";
                for (size_t i = 0; i < s->n_listeners; i++)
                        if (s->listen_fds[i] == fd)
                                name = s->listen_names[i] ?: "unknown";
                s->config.accept(s, TAKE_FD(cfd), name, s->config.userdata);
                socket_service_update_idle(s);
                return 0;
        }
        if (s->n_connections >= s->config.connections_max) {
                if (s->config.busy)
                        s->config.busy(s, cfd, s->config.userdata);
                return 0;
        }

        c = calloc(1, sizeof *c);
        if (!c) {
                log_oom();
                return 0;
        }
        c->service = s;
        c->fd = TAKE_FD(cfd);

        /* To an idle worker (a wake-up); a new worker only when every idle one has a connection already. */
        pthread_mutex_lock(&s->lock);
        if (s->n_idle <= s->n_queued)
                r = service_start_worker(s);
        if (r >= 0) {
                if (s->queue_tail)
                        s->queue_tail->queue_next = c;
                else
                        s->queue_head = c;
                s->queue_tail = c;
                s->n_queued++;
                (void) pthread_cond_signal(&s->work);
        }
        pthread_mutex_unlock(&s->lock);
        if (r < 0) {
                log_warning_errno(r, "Cannot start a worker, dropping the connection: %m");
                safe_close(c->fd);
                free(c);
                return 0;
        }
        LIST_PREPEND(s->connections, c);
        s->n_connections++;
        socket_service_update_idle(s);
        return 0;
}

int socket_service_new(const SocketServiceConfig *config, SocketService **ret) {
        SocketService *s;
        sigset_t mask;
        int r;

        assert(config && !!config->run != !!config->accept && ret);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        (void) signal(SIGPIPE, SIG_IGN);

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->config = *config;
        if (s->config.connections_max == 0)
                s->config.connections_max = SOCKET_SERVICE_CONNECTIONS_MAX_DEFAULT;
        if (s->config.head_usec == 0)
                s->config.head_usec = SOCKET_SERVICE_HEAD_USEC_DEFAULT;
        if (s->config.drain_usec == 0)
                s->config.drain_usec = SOCKET_SERVICE_DRAIN_USEC_DEFAULT;
        if (s->config.stack_size == 0)
                s->config.stack_size = SOCKET_SERVICE_STACK_SIZE_DEFAULT;
        if (s->config.workers_idle_max == 0)
                s->config.workers_idle_max = SOCKET_SERVICE_WORKERS_IDLE_DEFAULT;
        s->config.workers_idle_max = MIN(s->config.workers_idle_max, s->config.connections_max);
        for (size_t i = 0; i < SOCKET_SERVICE_LISTEN_FDS_MAX; i++)
                s->listen_fds[i] = -EBADF;
        (void) pthread_mutex_init(&s->lock, NULL);
        (void) pthread_cond_init(&s->work, NULL);

        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->wake_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = sd_event_new(&s->event);
        if (r < 0)
                goto fail;
        if ((r = sd_event_add_signal(s->event, NULL, SIGTERM, on_signal, s)) < 0 ||
            (r = sd_event_add_signal(s->event, NULL, SIGINT, on_signal, s)) < 0 ||
            (r = sd_event_add_io(s->event, &s->wake_source, s->wake_fd, EPOLLIN, on_wake, s)) < 0 ||
            (r = sd_event_add_time(s->event, &s->deadline_timer, CLOCK_MONOTONIC, 0, 0, on_deadline, s)) < 0 ||
            (r = sd_event_add_time(s->event, &s->idle_timer, CLOCK_MONOTONIC, 0, 0, on_idle, s)) < 0)
                goto fail;
        /* sd_event_add_time() arms a timer at once: off until there is a time to wait for, else the idle timer
         * would fire at 0, on the loop's first turn, before a pending connection is accepted */
        (void) sd_event_source_set_enabled(s->deadline_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(s->idle_timer, SD_EVENT_OFF);
        socket_service_update_idle(s);
        *ret = s;
        return 0;
fail:
        socket_service_free(s);
        return r;
}

SocketService *socket_service_free(SocketService *s) {
        if (!s)
                return NULL;
        /* socket_service_run() joined every worker; without it, none was started */
        assert(s->n_connections == 0 && !s->workers);
        for (size_t i = 0; i < SOCKET_SERVICE_LISTEN_FDS_MAX; i++) {
                sd_event_source_unref(s->listeners[i]);
                safe_close(s->listen_fds[i]);
                free(s->listen_names[i]);
        }
        sd_event_source_unref(s->idle_timer);
        sd_event_source_unref(s->deadline_timer);
        sd_event_source_unref(s->drain_timer);
        sd_event_source_unref(s->wake_source);
        sd_event_unref(s->event);
        safe_close(s->wake_fd);
        (void) pthread_cond_destroy(&s->work);
        (void) pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

int socket_service_add_listener(SocketService *s, int fd, const char *name) {
        int r;

        if (s->n_listeners >= SOCKET_SERVICE_LISTEN_FDS_MAX) {
                safe_close(fd);
                return -EMFILE;
        }
        s->listen_fds[s->n_listeners] = fd;     /* closed with s from here on */
        if (name && !(s->listen_names[s->n_listeners] = strdup(name)))
                return -ENOMEM;
        r = listen_fd_prepare(fd, true);
        if (r < 0)
                return r;
        r = sd_event_add_io(s->event, &s->listeners[s->n_listeners], fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return r;
        s->n_listeners++;
        return 0;
}

size_t socket_service_n_listeners(SocketService *s) {
        return s->n_listeners;
}

const char *socket_service_listener_name(SocketService *s, size_t i) {
        return i < s->n_listeners && s->listen_names[i] ? s->listen_names[i] : "unknown";
}

int socket_service_listen_systemd(SocketService *s) {
        _cleanup_strv_free_ char **names = NULL;
        int n, r;

        n = sd_listen_fds_with_names(true, &names);
        if (n < 0)
                return n;
        if (n == 0)
                return -EBADF;
        if ((unsigned) n > SOCKET_SERVICE_LISTEN_FDS_MAX)
                return -EMFILE;
        for (int i = 0; i < n; i++) {
                r = socket_service_add_listener(s, SD_LISTEN_FDS_START + i, names ? names[i] : NULL);
                if (r < 0) {
                        for (int j = i + 1; j < n; j++)
                                safe_close(SD_LISTEN_FDS_START + j);
                        return r;
                }
        }
        return 0;
}

sd_event *socket_service_event(SocketService *s) {
        return s->event;
}

bool socket_service_stopping(SocketService *s) {
        return atomic_load(&s->stopping);
}

int socket_service_run(SocketService *s) {
        int r;

        r = sd_event_loop(s->event);
        if (r < 0)
                log_debug_errno(r, "The event loop failed: %m");

        /* Whatever ended the loop, no worker outlives it. */
        pthread_mutex_lock(&s->lock);
        atomic_store(&s->stopping, true);
        s->workers_end = true;
        for (SocketConnection *c = s->connections; c; c = c->next)
                if (r < 0)
                        (void) shutdown(c->fd, SHUT_RDWR);
                else if (c->head_deadline != 0)
                        (void) shutdown(c->fd, SHUT_RD);
        (void) pthread_cond_broadcast(&s->work);
        pthread_mutex_unlock(&s->lock);
        /* the workers serve what is queued (each sees stopping), then end */
        while (s->workers) {
                SocketWorker *w = s->workers;
                (void) pthread_join(w->thread, NULL);
                LIST_REMOVE(s->workers, w);
                free(w);
                s->n_workers--;
        }
        while (s->connections)
                connection_free(s, s->connections);
        return r < 0 ? r : 0;
}

int socket_connection_fd(SocketConnection *c) {
        int fd;

        pthread_mutex_lock(&c->service->lock);
        fd = c->fd;
        pthread_mutex_unlock(&c->service->lock);
        return fd;
}

void socket_connection_set_fd(SocketConnection *c, int fd) {
        int old;

        pthread_mutex_lock(&c->service->lock);
        old = c->fd;
        c->fd = fd;
        pthread_mutex_unlock(&c->service->lock);
        safe_close(old);
}

int socket_connection_head_begin(SocketConnection *c) {
        SocketService *s = c->service;
        bool wake = false;

        pthread_mutex_lock(&s->lock);
        if (atomic_load(&s->stopping)) {
                pthread_mutex_unlock(&s->lock);
                return -ESHUTDOWN;
        }
        if (c->head_deadline == 0 && !c->head_expired) {
                c->head_deadline = clock_usec(CLOCK_MONOTONIC) + s->config.head_usec;
                /* the loop needs to know only when this deadline comes before the one it waits for */
                wake = s->deadline_armed == 0 || c->head_deadline < s->deadline_armed;
                if (wake)
                        s->deadline_armed = c->head_deadline;
        }
        pthread_mutex_unlock(&s->lock);
        if (wake)
                service_wake(s);
        return 0;
}

int socket_connection_head_end(SocketConnection *c) {
        bool expired;

        pthread_mutex_lock(&c->service->lock);
        c->head_deadline = 0;
        expired = c->head_expired;
        pthread_mutex_unlock(&c->service->lock);
        return expired ? -ETIMEDOUT : 0;
}

bool socket_connection_head_expired(SocketConnection *c) {
        bool expired;

        pthread_mutex_lock(&c->service->lock);
        expired = c->head_expired;
        pthread_mutex_unlock(&c->service->lock);
        return expired;
}

void socket_service_get_stats(SocketService *s, SocketServiceStats *ret) {
        pthread_mutex_lock(&s->lock);
        *ret = (SocketServiceStats) {
                .connections = s->n_connections,
                .workers = s->n_workers,
                .workers_idle = s->n_idle,
                .workers_started = s->workers_started,
        };
        pthread_mutex_unlock(&s->lock);
}

SocketService *socket_connection_service(SocketConnection *c) {
        return c->service;
}

int socket_service_parse_argv(int argc, char *argv[], const char *usage, const char *summary,
                              const SocketServiceOption *options, size_t n_options,
                              size_t n_positional, char **ret_positional) {
        enum { ARG_VERSION = 0x100, ARG_OPTION };
        _cleanup_free_ struct option *longopts = NULL;
        size_t n = 0;
        int c;

        longopts = calloc(n_options + 3, sizeof *longopts);
        if (!longopts)
                return log_oom();
        longopts[n++] = (struct option) { "help", no_argument, NULL, 'h' };
        longopts[n++] = (struct option) { "version", no_argument, NULL, ARG_VERSION };
        for (size_t i = 0; i < n_options; i++)
                longopts[n++] = (struct option) { options[i].name, required_argument, NULL, ARG_OPTION + (int) i };

        optind = 0;             /* glibc: start over, also for a second call in one process */
        opterr = 0;             /* our own messages, through the log */
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: %s %s\n\n%s\n", program_invocation_short_name, usage, strempty(summary));
                        return 0;
                case ARG_VERSION:
                        printf("%s %s\n", program_invocation_short_name, PACKAGE_VERSION);
                        return 0;
                case ':':
                        log_error("Option %s needs a value.", argv[optind - 1]);
                        return -EINVAL;
                case '?':
                        log_error("Unknown option %s. Usage: %s %s", argv[optind - 1], program_invocation_short_name, usage);
                        return -EINVAL;
                default:
                        assert(c >= ARG_OPTION && (size_t) (c - ARG_OPTION) < n_options);
                        *options[c - ARG_OPTION].ret_value = optarg;
                }
        if ((size_t) (argc - optind) != n_positional) {
                log_error("Usage: %s %s", program_invocation_short_name, usage);
                return -EINVAL;
        }
        for (size_t i = 0; i < n_positional; i++)
                ret_positional[i] = argv[optind + (int) i];
        return 1;
}
