/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How `loop relay` hands an agent's connection to the egress gateway: not by copying its bytes through
 * the gateway socket (the relay runs under the workload seccomp profile, which takes splice() away, so
 * every byte would be copied twice more), but by passing the accepted TCP socket itself over the unix
 * socket (SCM_RIGHTS) with one EGRESS_HANDOVER_MARKER byte. The gateway then reads and writes the agent's
 * connection directly, and splices tunnels from it to the upstream.
 *
 * The marker cannot start an HTTP request, so the gateway tells a hand-over from a client speaking HTTP
 * on the socket itself (the runner asking for the CA) by the first byte. What it accepts is one fd, a
 * connected TCP socket (IPv4 or IPv6), and nothing else: any other fd, or more than one, is closed and
 * the connection refused. */

#define EGRESS_HANDOVER_MARKER '\0'

#include "egress-token.h"

/* Sends fd over the connected unix stream socket sock, with the container's credential "NAME TOKEN\n"
 * (egress-token.h) after the marker, in the same message. */
int egress_handover_send(int sock, int fd, const char *credential);

/* With a hand-over waiting at the head of sock: the connection's fd (close-on-exec) in *ret_fd, the
 * credential that came with it in ret_credential (NUL-terminated, newline kept), 1. With anything else
 * first (an HTTP request): 0, nothing consumed. -ECONNRESET when sock ended before a byte, -EBADMSG for
 * a marker without exactly one fd or without a credential line, -EPROTONOSUPPORT for an fd that is not a
 * connected TCP socket (closed). sock must be readable (the caller polls with its timeout). */
int egress_handover_receive(int sock, int *ret_fd, char ret_credential[static EGRESS_HANDOVER_CREDENTIAL_MAX + 1]);
