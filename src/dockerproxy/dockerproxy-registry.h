/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pulls and pushes through the Docker API proxy reach a registry from the engine, outside the egress
 * gateway. So they are allowed only where the channel's egress policy would let the agent itself go:
 * the registry of the normalised reference (dockerproxy-image.h) is matched, as an https host and port,
 * against the channel's egress rules (egress-policy.h: egress.rules in order, then egress.registries,
 * then deny). The proxy gets a copy of the policy without secrets (proxy_registry_policy_document()). */

#include <stdint.h>
#include <json-c/json.h>

#include "egress-policy.h"

/* The host and port an engine contacts for a reference's domain: "docker.io" is registry-1.docker.io
 * (where both engines pull from and push to it), a domain without a port is on 443; the host normalised
 * by egress_host_normalize(). -EINVAL for a domain that is no host. */
int proxy_registry_of_domain(const char *domain, char **ret_host, uint16_t *ret_port);

/* The channel's "egress" object (NULL: the defaults) as the proxy gets it: its rules and registries, a
 * credential rule as an allow rule without its credential (the secret never leaves the gateway's
 * credential), the model API host not added (egress.allow_api false: that host is no registry). */
int proxy_registry_policy_document(json_object *egress, json_object **ret);

/* Whether policy lets the engine reach ref's registry: 1 yes, 0 no; the registry ("host:port") in
 * *ret_registry and the deciding rule's id in *ret_rule either way. A NULL policy (the channel has no
 * egress gateway) allows nothing. -EINVAL when ref is no reference, -ENOMEM. */
int proxy_registry_allows(const EgressPolicy *policy, const char *ref, char **ret_registry, const char **ret_rule);
