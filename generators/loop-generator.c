/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-generator: turns the channel files under /etc/loop into units, see systemd.generator(7).
 *
 * It reads only the config dir, writes only into the first output dir and talks to no other process. A
 * channel that is invalid is skipped with a message naming its file; it is never a reason to fail: the
 * other channels must still come up. The unit templates carry what is the same for every channel, with
 * the instance name (%i): the slice loop-%i.slice, LOOP_CHANNEL=%i, the egress credentials below; so a
 * channel costs a handful of files, and a drop-in only where its settings differ from the defaults the
 * services share with the config (src/shared/channel-defaults.h). For each valid, enabled channel NAME:
 *
 *   loop-SNAME.slice                              the channel's slice, with its total limits
 *   loop-channel@NAME.target                      the channel, armed: Wants= each of its units below,
 *                                                 SourcePath= its file (in place of the template)
 *   loop-agent@NAME.service.d/50-channel.conf     Slice= when SNAME is not NAME, the description,
 *                                                 LOOP_CONFIG_DIR= when not the default: when any of them
 *
 * and the units it wants: loop-agent@NAME.path (the runner starts when work is queued),
 * loop-tasks@NAME.socket and loop-tasks-sync@NAME.path (its scheduled tasks; a drop-in
 * loop-tasks@NAME.service.d/50-channel.conf for tasks.* other than the defaults); when the security gate is
 * on (gates.agentgate.enabled),
 *
 *   loop-gate@NAME.socket, loop-gate-admin@NAME.socket  approvals: the containers' and the humans' sockets
 *   loop-gate@NAME.service.d/50-channel.conf      the gate's settings (timeout, rate limits, audit) when
 *                                                 not the defaults, or with a webhook
 *   loop-gate@NAME.service.d/webhook-url          gates.webhook_url, 0600, passed as a credential
 *
 * when its Docker API proxy is on (gates.docker_proxy.enabled, which needs the gate),
 *
 *   loop-dockerproxy@NAME.socket                  the filtered Docker API the agent gets
 *   loop-dockerproxy@NAME.service.d/50-channel.conf the proxy's settings (engine socket, work dir...)
 *                                                 when they are not those the template sets
 *   loop-dockerproxy@NAME.service.d/policy.json   the channel's own proxy rules (default_decision,
 *                                                 http_rules, body_rules) when it has any, passed as
 *                                                 the credential "policy"; the service puts the
 *                                                 built-in rules after them
 *
 * when the channel's egress gateway is on (egress.enabled, the default),
 *
 *   loop-gateway@NAME.socket                      the agents' only way out
 *   loop-egress/NAME.gateway.json                 the egress policy and the real credentials, 0600 (in a
 *                                                 0700 directory): the template's LoadCredential=
 *
 * and when its browser is on (browser.enabled, the default),
 *
 *   loop-browser@NAME.socket                      the agents' browser
 *   loop-egress/NAME.browser.json                 the gateway's policy without its secrets, 0600
 *   loop-browser@NAME.service.d/50-channel.conf   browser.idle_timeout_sec when not the default; with no
 *                                                 egress gateway, an empty LoadCredential=
 *   loop-chrome@NAME.service.d/50-channel.conf    Slice= when SNAME is not NAME
 *
 * where SNAME is NAME escaped as systemd-escape does (a "-" would otherwise make a sub-slice). With at least
 * one channel generated, also
 *
 *   loop.target.d/50-channels.conf                Upholds=loop-channel@NAME.target of every channel:
 *                                                 loop.target keeps them armed, also one added by a
 *                                                 daemon-reload (past 8192 channels, more files)
 *   loop.target.wants/loop-reconcile.timer        the container registry's reconcile pass every 30 s
 *   loop.target.wants/loop-task-restore.service   every channel's task timers, made again at boot
 *
 * The templates name the egress files in systemd's output dir for generators, /run/systemd/generator: an
 * output dir given by hand gets the same tree, which those units would not find there.
 *
 * All of it is src/generator/generator.c (unit-tested, written through src/basic/unit-file.c); this file
 * is the program around it: as systemd runs it (three output dirs, logging to the kernel log), and by
 * hand, like Quadlet, with --dryrun (what it would write, on standard output; files only root may read
 * are named, not shown) and --help/--version. */

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "config-build.h"
#include "config.h"
#include "dirent-util.h"
#include "fs-util.h"
#include "generator.h"
#include "io-util.h"
#include "log.h"
#include "macro.h"
#include "strv.h"

#define DRYRUN_FILE_MAX (1024U * 1024U)

static void help(void) {
        printf("%s [OPTIONS...] NORMAL_DIR [EARLY_DIR LATE_DIR]\n\n"
               "Generate the units of loop's channels from %s (systemd runs this at boot and on\n"
               "daemon-reload; see loop-generator(8)).\n\n"
               "  -h --help      Show this help\n"
               "     --version  Show the version\n"
               "     --dryrun   Print what would be generated, and why a channel is skipped, without\n"
               "                writing anything; files only root may read are named, not shown\n",
               program_invocation_short_name, config_dir());
}

/* Prints the tree below dir_fd (relative path PREFIX), sorted: units and links as they are, files only
 * root may read (the gateway's credentials) by name and size only. */
static int print_tree(int dir_fd, const char *prefix) {
        _cleanup_free_ struct dirent **names = NULL;
        int n, r = 0;

        n = scandirat(dir_fd, ".", &names, NULL, alphasort);
        if (n < 0)
                return log_error_errno(errno, "Cannot list %s: %m", prefix);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ struct dirent *de = names[i];
                _cleanup_free_ char *path = NULL, *text = NULL;
                struct stat st;
                size_t size;

                if (r < 0 || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (asprintf(&path, "%s%s%s", prefix, *prefix ? "/" : "", de->d_name) < 0) {
                        r = log_oom();
                        continue;
                }
                if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = log_error_errno(errno, "Cannot stat %s: %m", path);
                        continue;
                }
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = openat(dir_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        r = sub < 0 ? log_error_errno(errno, "Cannot open %s: %m", path) : print_tree(sub, path);
                } else if (S_ISLNK(st.st_mode)) {
                        _cleanup_free_ char *target = NULL;
                        r = readlinkat_malloc(dir_fd, de->d_name, &target);
                        if (r >= 0)
                                printf("---%s---\n-> %s\n\n", path, target);
                } else if (!(st.st_mode & S_IROTH)) {
                        printf("---%s---\n(%jd bytes, mode %04o: not shown)\n\n", path, (intmax_t) st.st_size,
                               (unsigned) (st.st_mode & 07777));
                } else {
                        r = read_full_file_at(dir_fd, de->d_name, DRYRUN_FILE_MAX, false, &text, &size);
                        if (r < 0)
                                log_error_errno(r, "Cannot read %s: %m", path);
                        else
                                printf("---%s---\n%s%s\n", path, text, size > 0 && text[size - 1] == '\n' ? "" : "\n");
                }
        }
        return r;
}

/* Generates into a private directory, prints it, removes it. */
static int dryrun(void) {
        char dir[] = "/tmp/loop-generator-dryrun.XXXXXX";
        _cleanup_close_ int fd = -EBADF;
        int r, q;

        if (!mkdtemp(dir))
                return log_error_errno(errno, "Cannot make a directory for the dry run: %m");
        r = generator_run(config_dir(), dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        q = fd < 0 ? log_error_errno(errno, "Cannot open %s: %m", dir) : print_tree(fd, "");
        (void) rm_rf_at(AT_FDCWD, dir);
        return r < 0 ? r : q;
}

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_DRYRUN };
        static const struct option options[] = {
                { "help",    no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "dryrun",  no_argument, NULL, ARG_DRYRUN },
                {}
        };
        bool dry = false;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_VERSION:
                        printf("loop-generator %s\n", PACKAGE_VERSION);
                        return EXIT_SUCCESS;
                case ARG_DRYRUN:
                        dry = true;
                        break;
                default:
                        return EXIT_FAILURE;
                }

        if (dry) {
                if (optind != argc) {
                        log_error("--dryrun takes no directories.");
                        return EXIT_FAILURE;
                }
                log_setup();
                return dryrun() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }

        log_setup_generator();
        if (argc - optind != 1 && argc - optind != 3) {
                log_error_errno(EINVAL, "Usage: %s NORMAL_DIR [EARLY_DIR LATE_DIR] (or --help)", program_invocation_short_name);
                return EXIT_FAILURE;
        }
        return generator_run(config_dir(), argv[optind]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
