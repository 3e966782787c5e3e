/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Docker API proxy's settings (the environment loop-generator writes) and what it learns of the engine. */

#include "dockerproxy-conn.h"

/* Whether the proxy's network namespace has no interface but loopback (PrivateNetwork=). Read from
 * /proc/self/net/dev: if_nameindex() asks netlink, which RestrictAddressFamilies=AF_UNIX refuses. */
bool proxy_network_is_isolated(void);

/* The service's runtime directory: the seccomp profile for Podman, the record of frozen cgroups. */
int proxy_state_dir(const char *channel, char **ret);

/* What a proxy that died during a frozen start left frozen (its record) is thawed: at the service's
 * start, and by "--thaw CHANNEL" from the unit's ExecStopPost=. */
int proxy_thaw_leftovers(const char *state_dir);

/* The settings from the environment (the variables services/loop-dockerproxy.c lists) into p, whose
 * channel is set: each checked, a bad one refused with a message (-EINVAL). */
int proxy_settings(DockerProxy *p);

/* Frees what p holds and empties it (its locks are zeroed: unlocked, as initialised). */
void proxy_done(DockerProxy *p);

/* Which engine it is (the seccomp profile is given differently), and whether it manages cgroups through
 * systemd (then containers go into the channel's slice). An engine down at start is asked again at the
 * first create. */
void proxy_probe_engine(DockerProxy *p);

/* Which engine it is: found at start, else asked now (under create_lock, once for all workers). */
EngineKind proxy_engine_kind(DockerProxy *p);

/* The workload profile's security option for the engine (seccomp-profile.h), made once, under
 * create_lock. */
int proxy_seccomp_option(DockerProxy *p);
