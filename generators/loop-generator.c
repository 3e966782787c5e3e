/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-generator: turns the channel files under /etc/loop into units, see systemd.generator(7).
 *
 * It reads only the config dir, writes only into the first output dir and talks to no other process. A
 * channel that is invalid is skipped with a message naming its file; it is never a reason to fail: the
 * other channels must still come up. For each valid, enabled channel NAME it writes
 *
 *   loop-SNAME.slice                              the channel's slice, with its total limits
 *   loop-agent@NAME.service.d/50-channel.conf     Slice=, the channel's environment and description
 *   loop.target.d/50-channel-NAME.conf            Upholds=loop-channel@NAME.target: loop.target keeps the
 *                                                 channel armed, also one added by a daemon-reload
 *   loop-channel@NAME.target.wants/loop-agent@NAME.path  the runner starts when work is queued
 *
 * and, when the channel's security gate is on (gates.agentgate.enabled),
 *
 *   loop-channel@NAME.target.wants/loop-gate@NAME.socket       approvals: the containers' socket
 *   loop-channel@NAME.target.wants/loop-gate-admin@NAME.socket approvals: the humans' socket (`loop gate`)
 *   loop-gate@NAME.service.d/50-channel.conf      the gate's settings (timeout, rate limits, audit)
 *   loop-gate@NAME.service.d/webhook-url          gates.webhook_url, 0600, passed as a credential
 *
 * and, when its Docker API proxy is on (gates.docker_proxy.enabled, which needs the gate),
 *
 *   loop-channel@NAME.target.wants/loop-dockerproxy@NAME.socket the filtered Docker API the agent gets
 *   loop-dockerproxy@NAME.service.d/50-channel.conf the proxy's settings (engine socket, work dir)
 *   loop-dockerproxy@NAME.service.d/policy.json   the channel's own proxy rules (default_decision,
 *                                                 http_rules, body_rules) when it has any, passed as
 *                                                 the credential "policy"; the service puts the
 *                                                 built-in rules after them
 *
 * and, when the channel's egress gateway is on (egress.enabled, the default),
 *
 *   loop-channel@NAME.target.wants/loop-gateway@NAME.socket    the agents' only way out
 *   loop-gateway@NAME.service.d/50-channel.conf   LoadCredential= of the file below
 *   loop-gateway@NAME.service.d/egress.json       the egress policy and the real credentials, 0600
 *
 * where SNAME is NAME escaped as systemd-escape does (a "-" would otherwise make a sub-slice). With at least
 * one channel generated, also
 *
 *   loop.target.wants/loop-reconcile.timer        the container registry's reconcile pass every 30 s
 *
 * All of it is src/generator/generator.c (unit-tested, written through src/basic/unit-file.c); this file
 * is the program around it. */

#include "config.h"
#include "generator.h"
#include "log.h"

int main(int argc, char *argv[]) {
        log_setup_generator();

        if (argc != 2 && argc != 4) {
                log_error_errno(EINVAL, "Usage: %s NORMAL_DIR [EARLY_DIR LATE_DIR]", program_invocation_short_name);
                return EXIT_FAILURE;
        }
        return generator_run(config_dir(), argv[1]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
