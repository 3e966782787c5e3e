/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* "approve" verdicts: a human decides through the channel's loop-gate@NAME. */

#include "dockerproxy-conn.h"

/* Asks loop-gate@NAME. Never fails: trouble is a deny with the reason in *ret_reason. */
bool proxy_conn_ask_human(ProxyConn *c, const ProxyVerdict *v, char **ret_actor, char **ret_reason);
