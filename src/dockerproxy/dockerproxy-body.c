/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Docker API proxy's bodies, rebuilt from tables of the fields it knows (see the header). */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dockerproxy-body.h"
#include "dockerproxy-nested.h"
#include "json-util.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

typedef enum FieldType {
        FIELD_STRING,
        FIELD_BOOL,
        FIELD_INT,              /* any int64 */
        FIELD_UINT,             /* >= 0 */
        FIELD_STRV,             /* a list of strings */
        FIELD_STR_OR_STRV,      /* Cmd, Entrypoint: a string or a list of strings */
        FIELD_UINTV,            /* a list of unsigned integers (ConsoleSize) */
        FIELD_STRMAP,           /* an object of strings */
        FIELD_SETMAP,           /* an object of {} (Volumes, ExposedPorts) */
        FIELD_OBJECT,           /* an object of sub's fields */
        FIELD_OBJECTV,          /* a list of such objects */
        FIELD_OBJECTMAP,        /* an object of such objects (EndpointsConfig) */
        FIELD_ZERO,             /* absent, null, false, 0, "", [] or {} only; never forwarded */
} FieldType;

typedef struct Schema Schema;

/* A check of a value of the field's type (a string, an int, one element of a list, a map's key):
 * NULL when it may be, else why not. */
typedef const char *(*ValueCheck)(json_object *v);
typedef const char *(*KeyCheck)(const char *key);

typedef struct Field {
        const char *name;
        FieldType type;
        ValueCheck check;       /* on the value, or on each element of a list */
        KeyCheck key_check;     /* on each key of a map */
        const Schema *sub;
} Field;

struct Schema {
        const Field *fields;
        size_t n_fields;
};

#define SCHEMA(f) { .fields = f, .n_fields = ELEMENTSOF(f) }
/* One optional check after the name: S("Image") or S("Name", check_name). */
#define CHECK_(...) __VA_OPT__(.check = __VA_ARGS__)
#define KEY_CHECK_(...) __VA_OPT__(.key_check = __VA_ARGS__)
#define S(n, ...) { .name = n, .type = FIELD_STRING, CHECK_(__VA_ARGS__) }
#define B(n) { .name = n, .type = FIELD_BOOL }
#define I(n, ...) { .name = n, .type = FIELD_INT, CHECK_(__VA_ARGS__) }
#define U(n, ...) { .name = n, .type = FIELD_UINT, CHECK_(__VA_ARGS__) }
#define SV(n, ...) { .name = n, .type = FIELD_STRV, CHECK_(__VA_ARGS__) }
#define SM(n, ...) { .name = n, .type = FIELD_STRMAP, KEY_CHECK_(__VA_ARGS__) }
#define SET(n, ...) { .name = n, .type = FIELD_SETMAP, KEY_CHECK_(__VA_ARGS__) }
#define O(n, s) { .name = n, .type = FIELD_OBJECT, .sub = &s }
#define OV(n, s) { .name = n, .type = FIELD_OBJECTV, .sub = &s }
#define OM(n, s, ...) { .name = n, .type = FIELD_OBJECTMAP, .sub = &s, KEY_CHECK_(__VA_ARGS__) }
#define Z(n) { .name = n, .type = FIELD_ZERO }

/* ---- checks of values ---- */

static const char *one_of(const char *s, const char * const *allowed, size_t n, const char *reason) {
        for (size_t i = 0; i < n; i++)
                if (streq(s, allowed[i]))
                        return NULL;
        return reason;
}

#define ONE_OF(name, reason, ...)                                                               \
        static const char *name(json_object *v) {                                             \
                static const char * const allowed[] = { __VA_ARGS__ };                          \
                return one_of(json_object_get_string(v), allowed, ELEMENTSOF(allowed), reason); \
        }

ONE_OF(check_log_driver, "is not a log driver the proxy allows (json-file, k8s-file, journald, none)",
       "", "json-file", "k8s-file", "journald", "none")
ONE_OF(check_restart_policy, "is not a restart policy", "", "no", "always", "unless-stopped", "on-failure")
ONE_OF(check_volume_driver, "is not the local volume driver", "", "local")
ONE_OF(check_network_driver, "is not the bridge network driver", "", "bridge")
ONE_OF(check_ipam_driver, "is not the default IPAM driver", "", "default")
ONE_OF(check_runtime, "is not a default runtime", "", "runc", "crun")
ONE_OF(check_isolation, "is not the default isolation", "", "default")
ONE_OF(check_private_ns, "is not a namespace mode the proxy allows", "", "private")
ONE_OF(check_userns, "is not a user namespace mode the proxy allows", "")
ONE_OF(check_propagation, "is not a private propagation", "", "private", "rprivate")
ONE_OF(check_mount_type, "is not a mount type the proxy allows (bind, volume, tmpfs)", "bind", "volume", "tmpfs")
ONE_OF(check_consistency, "is not a mount consistency", "", "default", "consistent", "cached", "delegated")
ONE_OF(check_ulimit_name, "is not a ulimit the proxy allows (nofile, nproc, core, stack)", "nofile", "nproc", "core", "stack")

static bool ref_chars_valid(const char *s) {
        return ref_name_is_valid(s, 256);
}

/* Names the engines read as a network mode rather than a network's name. */
bool proxy_network_name_is_allowed(const char *name) {
        static const char * const special[] = {
                "host", "slirp4netns", "pasta", "private", "ns", "container", "default", "bridge", "none", "podman",
        };
        if (!ref_chars_valid(name))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(special); i++)
                if (strcasecmp(name, special[i]) == 0)
                        return false;
        return true;
}

static const char *check_network_name_key(const char *key) {
        /* in a create's EndpointsConfig the engine's own networks may be named */
        if (streq(key, "bridge") || streq(key, "default") || streq(key, "podman") || streq(key, "none"))
                return NULL;
        return proxy_network_name_is_allowed(key) ? NULL : "is not a network the proxy allows";
}

static const char *check_object_name(json_object *v) {
        const char *s = json_object_get_string(v);
        if (isempty(s))
                return NULL;            /* the engine names it */
        return proxy_network_name_is_allowed(s) ? NULL : "is not a name the proxy allows";
}

static const char *check_network_mode(json_object *v) {
        const char *s = json_object_get_string(v), *ref;

        if (isempty(s) || streq(s, "default") || streq(s, "bridge") || streq(s, "none"))
                return NULL;
        if ((ref = startswith(s, "container:")))
                return ref_chars_valid(ref) ? NULL : "names no container";
        return proxy_network_name_is_allowed(s) ? NULL : "is not a network mode the proxy allows";
}

static const char *check_container_ns(json_object *v, const char * const *plain, size_t n) {
        const char *s = json_object_get_string(v), *ref;

        if ((ref = startswith(s, "container:")))
                return ref_chars_valid(ref) ? NULL : "names no container";
        return one_of(s, plain, n, "is not a namespace mode the proxy allows (host and ns: paths are refused)");
}

static const char *check_pid_mode(json_object *v) {
        static const char * const plain[] = { "", "private" };
        return check_container_ns(v, plain, ELEMENTSOF(plain));
}

static const char *check_ipc_mode(json_object *v) {
        static const char * const plain[] = { "", "none", "private", "shareable" };
        return check_container_ns(v, plain, ELEMENTSOF(plain));
}

static const char *check_absolute(json_object *v) {
        const char *s = json_object_get_string(v);
        return s[0] == '/' && !strchr(s, ':') && !strchr(s, ',') ? NULL : "is not an absolute path";
}

static const char *check_absolute_key(const char *key) {
        return key[0] == '/' && !strchr(key, ':') ? NULL : "is not an absolute path";
}

static const char *check_label_key(const char *key) {
        return isempty(key) ? "is an empty label" : NULL;
}

static const char *check_group(json_object *v) {
        const char *s = json_object_get_string(v);
        /* Podman's keep-groups hands the caller's host groups to the container */
        return !isempty(s) && strcasecmp(s, "keep-groups") != 0 && ref_chars_valid(s) ? NULL : "is not a group the proxy allows";
}

static const char *check_oom_score_adj(json_object *v) {
        int64_t i = json_object_get_int64(v);
        return i >= 0 && i <= 1000 ? NULL : "may only make the container likelier to be killed (0..1000)";
}

static const char *check_blkio_weight(json_object *v) {
        return json_object_get_int64(v) <= 1000 ? NULL : "is beyond 1000";
}

static const char *check_swappiness(json_object *v) {
        int64_t i = json_object_get_int64(v);
        return i >= -1 && i <= 100 ? NULL : "is not -1..100";
}

static const char *check_pids_create(json_object *v) {
        int64_t i = json_object_get_int64(v);
        /* 0 (none given) gets the channel's limit; -1 (none at all) is refused */
        return i >= 0 && i <= PROXY_PIDS_LIMIT ? NULL : "is not a pids limit the proxy allows (1..1024)";
}

static const char *check_pids_update(json_object *v) {
        int64_t i = json_object_get_int64(v);
        return i >= 1 && i <= PROXY_PIDS_LIMIT ? NULL : "is not a pids limit the proxy allows (1..1024)";
}

static const char *check_ulimit_value(json_object *v) {
        int64_t i = json_object_get_int64(v);
        return i >= 0 && i <= 1048576 ? NULL : "is not 0..1048576";
}

static const char *check_console_size(json_object *v) {
        return json_object_get_int64(v) <= 65535 ? NULL : "is beyond 65535";
}

/* Capabilities an agent may add back after the floor's drop of ALL: none that reaches past the
 * container's own files (CHOWN, DAC_OVERRIDE, FOWNER, FSETID work on the binds of the work dir). */
bool proxy_capability_may_be_added(const char *cap) {
        static const char * const allowed[] = {
                "NET_BIND_SERVICE", "KILL", "SETUID", "SETGID", "SETPCAP", "SYS_CHROOT", "AUDIT_WRITE",
        };
        char buf[64];
        size_t n = 0;

        if (!cap)
                return false;
        if (strncasecmp(cap, "CAP_", 4) == 0)
                cap += 4;
        for (; cap[n]; n++) {
                if (n + 1 >= sizeof(buf))
                        return false;
                buf[n] = (char) (cap[n] >= 'a' && cap[n] <= 'z' ? cap[n] - 'a' + 'A' : cap[n]);
        }
        buf[n] = 0;
        return !one_of(buf, allowed, ELEMENTSOF(allowed), "no");
}

static const char *check_cap_add(json_object *v) {
        return proxy_capability_may_be_added(json_object_get_string(v)) ? NULL :
                "is not a capability an agent may add (NET_BIND_SERVICE, KILL, SETUID, SETGID, SETPCAP, SYS_CHROOT, AUDIT_WRITE)";
}

static const char *check_cap_name(json_object *v) {
        const char *s = json_object_get_string(v);
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
                        return "is not a capability name";
        return isempty(s) ? "is not a capability name" : NULL;
}

/* no-new-privileges in its true forms (the proxy's own goes last), Podman's mask= (more masks) and
 * unmask= (dropped by the floor, which masks what the channel masks). Nothing that names a profile,
 * a label or a path elsewhere. */
bool proxy_security_opt_is_allowed(const char *opt) {
        const char *rest;

        if (!opt)
                return false;
        if (streq(opt, "no-new-privileges") || streq(opt, "no-new-privileges=true") || streq(opt, "no-new-privileges:true"))
                return true;
        if ((rest = startswith(opt, "mask=")) || (rest = startswith(opt, "unmask="))) {
                for (const char *p = rest; *p;) {
                        size_t n = strcspn(p, ":");
                        if (!((n > 6 && strncmp(p, "/proc/", 6) == 0) || (n > 5 && strncmp(p, "/sys/", 5) == 0) ||
                              (startswith(opt, "unmask=") && n == 3 && strncmp(p, "ALL", 3) == 0)))
                                return false;
                        p += n + (p[n] == ':');
                }
                return !isempty(rest);
        }
        return false;
}

static const char *check_security_opt(json_object *v) {
        return proxy_security_opt_is_allowed(json_object_get_string(v)) ? NULL :
                "is not a security option the proxy allows (no-new-privileges, mask=, unmask=)";
}

/* "source:target[:options]": a source that is an absolute path or a volume name, an absolute target,
 * options from a short list. Not: Podman's overlay (O, upperdir=, workdir=), idmap, U (chown), suid,
 * dev, exec, shared propagation, copy. */
bool proxy_bind_spec_is_allowed(const char *spec, const char **ret_reason) {
        static const char * const options[] = {
                "ro", "rw", "z", "Z", "nocopy", "private", "rprivate", "consistent", "cached", "delegated",
                "nosuid", "nodev", "noexec",
        };
        const char *src_end, *dst, *dst_end, *opts;
        char src[4096];

        *ret_reason = "is not source:target[:options]";
        if (!spec)
                return false;
        src_end = strchr(spec, ':');
        if (!src_end || src_end == spec || (size_t) (src_end - spec) >= sizeof(src))
                return false;
        memcpy(src, spec, (size_t) (src_end - spec));
        src[src_end - spec] = 0;
        if (src[0] != '/' && !ref_chars_valid(src)) {
                *ret_reason = "has a source that is neither an absolute path nor a volume name";
                return false;
        }
        dst = src_end + 1;
        dst_end = strchr(dst, ':');
        if (dst[0] != '/' || dst_end == dst + 1) {
                *ret_reason = "has a target that is not an absolute path";
                return false;
        }
        if (!dst_end)
                return true;
        opts = dst_end + 1;
        if (strchr(opts, ':'))
                return false;
        for (const char *p = opts; *p;) {
                size_t n = strcspn(p, ",");
                bool found = false;
                for (size_t i = 0; i < ELEMENTSOF(options); i++)
                        found = found || (strlen(options[i]) == n && strncmp(p, options[i], n) == 0);
                if (!found) {
                        *ret_reason = "has a bind option the proxy does not allow (ro, rw, z, Z, nocopy, private, "
                                "rprivate, consistent, cached, delegated, nosuid, nodev, noexec)";
                        return false;
                }
                p += n + (p[n] == ',');
        }
        return true;
}

static const char *check_bind(json_object *v) {
        const char *reason;
        return proxy_bind_spec_is_allowed(json_object_get_string(v), &reason) ? NULL : reason;
}

/* A volume's driver options: a tmpfs ("type=tmpfs,device=tmpfs,o=size=...") and nothing that binds. */
static const char *check_volume_opt_key(const char *key) {
        static const char * const keys[] = { "type", "device", "o" };
        return one_of(key, keys, ELEMENTSOF(keys), "is not a volume driver option the proxy allows (type, device, o)");
}

static const char *check_volume_opt_value(json_object *v) {
        static const char * const flags[] = { "nosuid", "nodev", "noexec" };
        static const char * const valued[] = { "size=", "nr_inodes=", "mode=", "uid=", "gid=" };
        const char *s = json_object_get_string(v);

        if (streq(s, "tmpfs"))
                return NULL;
        for (const char *p = s; *p;) {
                size_t n = strcspn(p, ",");
                bool found = false;
                for (size_t i = 0; i < ELEMENTSOF(flags); i++)
                        found = found || (strlen(flags[i]) == n && strncmp(p, flags[i], n) == 0);
                for (size_t i = 0; i < ELEMENTSOF(valued); i++)
                        found = found || (n > strlen(valued[i]) && strncmp(p, valued[i], strlen(valued[i])) == 0 &&
                                          strspn(p + strlen(valued[i]), "0123456789kmgKMG") == n - strlen(valued[i]));
                if (!found)
                        return "is not a tmpfs option the proxy allows (size=, nr_inodes=, mode=, uid=, gid=, nosuid, nodev, noexec)";
                p += n + (p[n] == ',');
        }
        return isempty(s) ? "is empty" : NULL;
}

_Static_assert(PROXY_PIDS_LIMIT == 1024, "the pids limit's messages say 1024");

/* ---- the tables ---- */

static const Field log_config_fields[] = {
        S("Type", check_log_driver),
        Z("Config"),            /* path=, syslog-address=...: no driver option at all */
};
static const Schema log_config_schema = SCHEMA(log_config_fields);

static const Field restart_policy_fields[] = {
        S("Name", check_restart_policy),
        U("MaximumRetryCount"),
};
static const Schema restart_policy_schema = SCHEMA(restart_policy_fields);

static const Field ulimit_fields[] = {
        S("Name", check_ulimit_name),
        U("Soft", check_ulimit_value),
        U("Hard", check_ulimit_value),
};
static const Schema ulimit_schema = SCHEMA(ulimit_fields);

static const Field bind_options_fields[] = {
        S("Propagation", check_propagation),
        B("NonRecursive"),
        Z("CreateMountpoint"),
        Z("ReadOnlyNonRecursive"),
        Z("ReadOnlyForceRecursive"),
};
static const Schema bind_options_schema = SCHEMA(bind_options_fields);

static const Field volume_options_fields[] = {
        B("NoCopy"),
        SM("Labels", check_label_key),
        Z("DriverConfig"),
        Z("Subpath"),
};
static const Schema volume_options_schema = SCHEMA(volume_options_fields);

static const Field tmpfs_options_fields[] = {
        U("SizeBytes"),
        U("Mode"),              /* checked with the tmpfs sizes (proxy_tmpfs_check()) */
        Z("Options"),
};
static const Schema tmpfs_options_schema = SCHEMA(tmpfs_options_fields);

static const Field mount_fields[] = {
        S("Type", check_mount_type),
        S("Source"),            /* a path or a volume name: checked by the policy and the pins */
        S("Target", check_absolute),
        B("ReadOnly"),
        S("Consistency", check_consistency),
        O("BindOptions", bind_options_schema),
        O("VolumeOptions", volume_options_schema),
        O("TmpfsOptions", tmpfs_options_schema),
        Z("ImageOptions"),
        Z("ClusterOptions"),
};
static const Schema mount_schema = SCHEMA(mount_fields);

/* container.Resources: in a create's HostConfig and an update's body. */
#define RESOURCES_FIELDS(pids_check)                            \
        U("CpuShares"),                                         \
        U("Memory"),                                            \
        U("NanoCpus"),                                          \
        Z("CgroupParent"),                                      \
        U("BlkioWeight", check_blkio_weight),                   \
        Z("BlkioWeightDevice"),                                 \
        Z("BlkioDeviceReadBps"),                                \
        Z("BlkioDeviceWriteBps"),                               \
        Z("BlkioDeviceReadIOps"),                               \
        Z("BlkioDeviceWriteIOps"),                              \
        U("CpuPeriod"),                                         \
        I("CpuQuota"),                                          \
        Z("CpuRealtimePeriod"),                                 \
        Z("CpuRealtimeRuntime"),                                \
        S("CpusetCpus"),                                        \
        S("CpusetMems"),                                        \
        Z("Devices"),                                           \
        Z("DeviceCgroupRules"),                                 \
        Z("DeviceRequests"),                                    \
        U("KernelMemory"),                                      \
        U("KernelMemoryTCP"),                                   \
        U("MemoryReservation"),                                 \
        I("MemorySwap"),                                        \
        I("MemorySwappiness", check_swappiness),                \
        Z("OomKillDisable"),                                    \
        I("PidsLimit", pids_check),                             \
        OV("Ulimits", ulimit_schema),                           \
        Z("CpuCount"),                                          \
        Z("CpuPercent"),                                        \
        Z("IOMaximumIOps"),                                     \
        Z("IOMaximumBandwidth")

static const Field host_config_fields[] = {
        SV("Binds", check_bind),
        Z("ContainerIDFile"),
        O("LogConfig", log_config_schema),
        S("NetworkMode", check_network_mode),
        Z("PortBindings"),
        O("RestartPolicy", restart_policy_schema),
        B("AutoRemove"),
        S("VolumeDriver", check_volume_driver),
        Z("VolumesFrom"),
        SV("CapAdd", check_cap_add),
        SV("CapDrop", check_cap_name),
        Z("Capabilities"),
        S("CgroupnsMode", check_private_ns),
        SV("Dns"),
        SV("DnsOptions"),
        SV("DnsSearch"),
        SV("ExtraHosts"),
        SV("GroupAdd", check_group),
        S("IpcMode", check_ipc_mode),
        Z("Cgroup"),
        Z("Links"),             /* another container's environment, secrets included */
        I("OomScoreAdj", check_oom_score_adj),
        S("PidMode", check_pid_mode),
        Z("Privileged"),
        Z("PublishAllPorts"),
        B("ReadonlyRootfs"),
        SV("SecurityOpt", check_security_opt),
        Z("StorageOpt"),
        SM("Tmpfs", check_absolute_key),
        S("UTSMode", check_private_ns),
        S("UsernsMode", check_userns),
        U("ShmSize"),
        Z("Sysctls"),
        S("Runtime", check_runtime),
        { .name = "ConsoleSize", .type = FIELD_UINTV, .check = check_console_size },
        S("Isolation", check_isolation),
        RESOURCES_FIELDS(check_pids_create),
        OV("Mounts", mount_schema),
        SV("MaskedPaths", check_absolute),
        SV("ReadonlyPaths", check_absolute),
        B("Init"),
        Z("Annotations"),
};
static const Schema host_config_schema = SCHEMA(host_config_fields);

static const Field ipam_config_fields[] = {
        S("IPv4Address"),
        S("IPv6Address"),
        SV("LinkLocalIPs"),
};
static const Schema ipam_config_schema = SCHEMA(ipam_config_fields);

static const Field endpoint_fields[] = {
        O("IPAMConfig", ipam_config_schema),
        Z("Links"),
        SV("Aliases"),
        S("NetworkID"),
        S("EndpointID"),
        S("Gateway"),
        S("IPAddress"),
        U("IPPrefixLen"),
        S("IPv6Gateway"),
        S("GlobalIPv6Address"),
        U("GlobalIPv6PrefixLen"),
        S("MacAddress"),
        Z("DriverOpts"),
        SV("DNSNames"),
        I("GwPriority"),
};
static const Schema endpoint_schema = SCHEMA(endpoint_fields);

static const Field networking_config_fields[] = {
        OM("EndpointsConfig", endpoint_schema, check_network_name_key),
};
static const Schema networking_config_schema = SCHEMA(networking_config_fields);

static const Field healthcheck_fields[] = {
        SV("Test"),
        U("Interval"),
        U("Timeout"),
        U("StartPeriod"),
        U("StartInterval"),
        U("Retries"),
};
static const Schema healthcheck_schema = SCHEMA(healthcheck_fields);

/* container.Config: a create's body (with HostConfig and NetworkingConfig) and a commit's. */
#define CONFIG_FIELDS                                                   \
        S("Hostname"),                                                  \
        S("Domainname"),                                                \
        S("User"),                                                      \
        B("AttachStdin"),                                               \
        B("AttachStdout"),                                              \
        B("AttachStderr"),                                              \
        SET("ExposedPorts"),                                            \
        B("Tty"),                                                       \
        B("OpenStdin"),                                                 \
        B("StdinOnce"),                                                 \
        SV("Env"),                                                      \
        { .name = "Cmd", .type = FIELD_STR_OR_STRV },                   \
        O("Healthcheck", healthcheck_schema),                           \
        B("ArgsEscaped"),                                               \
        S("Image"),                                                     \
        SET("Volumes", check_absolute_key),                             \
        S("WorkingDir"),                                                \
        { .name = "Entrypoint", .type = FIELD_STR_OR_STRV },            \
        B("NetworkDisabled"),                                           \
        S("MacAddress"),                                                \
        SV("OnBuild"),                                                  \
        SM("Labels", check_label_key),                                  \
        S("StopSignal"),                                                \
        I("StopTimeout"),                                               \
        SV("Shell"),                                                    \
        Z("PortSpecs")

static const Field container_create_fields[] = {
        CONFIG_FIELDS,
        O("HostConfig", host_config_schema),
        O("NetworkingConfig", networking_config_schema),
};
static const Schema container_create_schema = SCHEMA(container_create_fields);

static const Field container_config_fields[] = {
        CONFIG_FIELDS,
};
static const Schema container_config_schema = SCHEMA(container_config_fields);

static const Field container_update_fields[] = {
        RESOURCES_FIELDS(check_pids_update),
        O("RestartPolicy", restart_policy_schema),
};
static const Schema container_update_schema = SCHEMA(container_update_fields);

static const Field exec_create_fields[] = {
        B("Detach"),
        B("AttachStdin"),
        B("AttachStdout"),
        B("AttachStderr"),
        { .name = "ConsoleSize", .type = FIELD_UINTV, .check = check_console_size },
        S("DetachKeys"),
        B("Tty"),
        SV("Env"),
        SV("Cmd"),
        Z("Privileged"),
        S("User"),
        S("WorkingDir"),
};
static const Schema exec_create_schema = SCHEMA(exec_create_fields);

static const Field exec_start_fields[] = {
        B("Detach"),
        B("Tty"),
        { .name = "ConsoleSize", .type = FIELD_UINTV, .check = check_console_size },
};
static const Schema exec_start_schema = SCHEMA(exec_start_fields);

static const Field volume_create_fields[] = {
        S("Name", check_object_name),
        S("Driver", check_volume_driver),
        { .name = "DriverOpts", .type = FIELD_STRMAP, .key_check = check_volume_opt_key, .check = check_volume_opt_value },
        SM("Labels", check_label_key),
        Z("ClusterVolumeSpec"),
};
static const Schema volume_create_schema = SCHEMA(volume_create_fields);

static const Field ipam_fields[] = {
        S("Driver", check_ipam_driver),
        Z("Config"),            /* a subnet of the caller's: a bridge on the host that routes it (the LAN's,
                                 * the gateway's) away from where the host sends it; the engine picks one */
        Z("Options"),
};
static const Schema ipam_schema = SCHEMA(ipam_fields);

static const Field network_create_fields[] = {
        S("Name", check_object_name),
        B("CheckDuplicate"),
        S("Driver", check_network_driver),
        Z("Scope"),
        B("Internal"),
        B("Attachable"),
        Z("Ingress"),
        O("IPAM", ipam_schema),
        B("EnableIPv4"),
        B("EnableIPv6"),
        Z("Options"),           /* bridge options: the host's interface names, MTU, masquerading */
        SM("Labels", check_label_key),
        Z("ConfigOnly"),
        Z("ConfigFrom"),
};
static const Schema network_create_schema = SCHEMA(network_create_fields);

static const Field network_connect_fields[] = {
        S("Container"),
        O("EndpointConfig", endpoint_schema),
};
static const Schema network_connect_schema = SCHEMA(network_connect_fields);

static const Field network_disconnect_fields[] = {
        S("Container"),
        B("Force"),
};
static const Schema network_disconnect_schema = SCHEMA(network_disconnect_fields);

static const Schema none_schema = {};   /* any field is refused */

static const Schema *schema_for(ProxyBodyKind kind) {
        switch (kind) {
        case PROXY_BODY_NONE:
                return &none_schema;
        case PROXY_BODY_CONTAINER_CREATE:
                return &container_create_schema;
        case PROXY_BODY_CONTAINER_UPDATE:
                return &container_update_schema;
        case PROXY_BODY_CONTAINER_CONFIG:
                return &container_config_schema;
        case PROXY_BODY_EXEC_CREATE:
                return &exec_create_schema;
        case PROXY_BODY_EXEC_START:
                return &exec_start_schema;
        case PROXY_BODY_VOLUME_CREATE:
                return &volume_create_schema;
        case PROXY_BODY_NETWORK_CREATE:
                return &network_create_schema;
        case PROXY_BODY_NETWORK_CONNECT:
                return &network_connect_schema;
        case PROXY_BODY_NETWORK_DISCONNECT:
                return &network_disconnect_schema;
        default:
                return NULL;
        }
}

/* ---- the walk ---- */

typedef struct Walk {
        char path[PROXY_BODY_FIELD_MAX];        /* the field being read */
        char *fields;                           /* the fields with a value, for the journal (or NULL) */
        size_t n_fields;                        /* bytes in fields */
        ProxyBodyRefusal *refusal;
} Walk;

static int refuse(Walk *w, int r, const char *reason) {
        if (w->refusal) {
                snprintf(w->refusal->field, sizeof(w->refusal->field), "%s", w->path);
                w->refusal->reason = reason;
        }
        return r;
}

/* Appends ".name" (or "[i]") to the path; returns the old length, to cut it back to. */
static size_t path_push_name(Walk *w, const char *name) {
        size_t old = strlen(w->path);
        snprintf(w->path + old, sizeof(w->path) - old, "%s%s", old == 0 ? "" : ".", name);
        return old;
}

static size_t path_push_index(Walk *w, size_t i) {
        size_t old = strlen(w->path);
        snprintf(w->path + old, sizeof(w->path) - old, "[%zu]", i);
        return old;
}

static void note_field(Walk *w) {
        size_t n = strlen(w->path);

        if (!w->fields || w->n_fields + 1 + n + 1 > PROXY_BODY_FIELDS_LOG_MAX)
                return;
        if (w->n_fields > 0)
                w->fields[w->n_fields++] = ',';
        memcpy(w->fields + w->n_fields, w->path, n + 1);
        w->n_fields += n;
}

static int rebuild_object(Walk *w, const Schema *s, json_object *in, json_object **ret);

/* An int64 as Go's decoder takes it: a JSON integer (json-c says int; an out-of-range one saturates,
 * which errno tells). */
static bool is_int64(json_object *v) {
        if (!json_object_is_type(v, json_type_int))
                return false;
        errno = 0;
        int64_t i = json_object_get_int64(v);
        return !((i == INT64_MAX || i == INT64_MIN) && errno == ERANGE);
}

static int check_string_list(Walk *w, const Field *f, json_object *v) {
        if (json_object_array_length(v) > PROXY_BODY_LIST_MAX)
                return refuse(w, -EPERM, "has too many elements");
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *e = json_object_array_get_idx(v, i);
                size_t old = path_push_index(w, i);
                const char *why;
                if (f->type == FIELD_UINTV) {
                        if (!is_int64(e) || json_object_get_int64(e) < 0)
                                return refuse(w, -EBADMSG, "is not an unsigned integer");
                } else if (!json_object_is_type(e, json_type_string))
                        return refuse(w, -EBADMSG, "is not a string");
                if (f->check && (why = f->check(e)))
                        return refuse(w, -EPERM, why);
                w->path[old] = 0;
        }
        return 0;
}

static int rebuild_value(Walk *w, const Field *f, json_object *v, json_object **ret) {
        const char *why;
        int r;

        *ret = NULL;
        switch (f->type) {
        case FIELD_ZERO:
                return json_value_is_empty(v, true) ? 0 : refuse(w, -EPERM, "may not be set through the proxy");
        case FIELD_STRING:
                if (!json_object_is_type(v, json_type_string))
                        return refuse(w, -EBADMSG, "is not a string");
                break;
        case FIELD_BOOL:
                if (!json_object_is_type(v, json_type_boolean))
                        return refuse(w, -EBADMSG, "is not a boolean");
                break;
        case FIELD_INT:
        case FIELD_UINT:
                if (!is_int64(v))
                        return refuse(w, -EBADMSG, "is not an integer");
                if (f->type == FIELD_UINT && json_object_get_int64(v) < 0)
                        return refuse(w, -EPERM, "is negative");
                break;
        case FIELD_STR_OR_STRV:
                if (json_object_is_type(v, json_type_string))
                        break;
                __attribute__((fallthrough));
        case FIELD_STRV:
        case FIELD_UINTV:
                if (!json_object_is_type(v, json_type_array))
                        return refuse(w, -EBADMSG, "is not a list");
                r = check_string_list(w, f, v);
                if (r < 0)
                        return r;
                break;
        case FIELD_STRMAP:
        case FIELD_SETMAP:
                if (!json_object_is_type(v, json_type_object))
                        return refuse(w, -EBADMSG, "is not an object");
                if ((size_t) json_object_object_length(v) > PROXY_BODY_LIST_MAX)
                        return refuse(w, -EPERM, "has too many entries");
                json_object_object_foreach(v, k, e) {
                        size_t old = path_push_name(w, k);
                        if (f->key_check && (why = f->key_check(k)))
                                return refuse(w, -EPERM, why);
                        if (f->type == FIELD_STRMAP && !json_object_is_type(e, json_type_string))
                                return refuse(w, -EBADMSG, "is not a string");
                        if (f->type == FIELD_SETMAP && !(json_object_is_type(e, json_type_null) ||
                                                          (json_object_is_type(e, json_type_object) && json_object_object_length(e) == 0)))
                                return refuse(w, -EBADMSG, "is not {}");
                        if (f->check && (why = f->check(e)))
                                return refuse(w, -EPERM, why);
                        w->path[old] = 0;
                }
                break;
        case FIELD_OBJECT:
                if (!json_object_is_type(v, json_type_object))
                        return refuse(w, -EBADMSG, "is not an object");
                return rebuild_object(w, f->sub, v, ret);
        case FIELD_OBJECTV: {
                _cleanup_(json_object_putp) json_object *a = NULL;
                if (!json_object_is_type(v, json_type_array))
                        return refuse(w, -EBADMSG, "is not a list");
                if (json_object_array_length(v) > PROXY_BODY_LIST_MAX)
                        return refuse(w, -EPERM, "has too many elements");
                a = json_object_new_array();
                if (!a)
                        return -ENOMEM;
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        json_object *el = json_object_array_get_idx(v, i), *o = NULL;
                        size_t old = path_push_index(w, i);
                        if (!json_object_is_type(el, json_type_object))
                                return refuse(w, -EBADMSG, "is not an object");
                        r = rebuild_object(w, f->sub, el, &o);
                        if (r < 0)
                                return r;
                        if (json_object_array_add(a, o) < 0) {
                                json_object_put(o);
                                return -ENOMEM;
                        }
                        w->path[old] = 0;
                }
                *ret = TAKE_PTR(a);
                return 0;
        }
        case FIELD_OBJECTMAP: {
                _cleanup_(json_object_putp) json_object *m = NULL;
                if (!json_object_is_type(v, json_type_object))
                        return refuse(w, -EBADMSG, "is not an object");
                if ((size_t) json_object_object_length(v) > PROXY_BODY_LIST_MAX)
                        return refuse(w, -EPERM, "has too many entries");
                m = json_object_new_object();
                if (!m)
                        return -ENOMEM;
                json_object_object_foreach(v, mk, me) {
                        json_object *o = NULL;
                        size_t old = path_push_name(w, mk);
                        if (f->key_check && (why = f->key_check(mk)))
                                return refuse(w, -EPERM, why);
                        if (!json_object_is_type(me, json_type_object) && !json_object_is_type(me, json_type_null))
                                return refuse(w, -EBADMSG, "is not an object");
                        if (me) {
                                r = rebuild_object(w, f->sub, me, &o);
                                if (r < 0)
                                        return r;
                        } else if (!(o = json_object_new_object()))
                                return -ENOMEM;
                        if (json_object_object_add(m, mk, o) < 0) {
                                json_object_put(o);
                                return -ENOMEM;
                        }
                        w->path[old] = 0;
                }
                *ret = TAKE_PTR(m);
                return 0;
        }
        }

        if (f->check && f->type != FIELD_STRV && f->type != FIELD_UINTV && f->type != FIELD_STR_OR_STRV &&
            f->type != FIELD_STRMAP && f->type != FIELD_SETMAP && (why = f->check(v)))
                return refuse(w, -EPERM, why);
        /* a copy: what goes to the engine is this body's, made of values checked above */
        r = json_object_deep_copy(v, ret, NULL);
        return r < 0 ? -ENOMEM : 0;
}

static int rebuild_object(Walk *w, const Schema *s, json_object *in, json_object **ret) {
        _cleanup_(json_object_putp) json_object *out = json_object_new_object();

        if (!out)
                return -ENOMEM;
        json_object_object_foreach(in, k, v) {
                const Field *f = NULL;
                json_object *o = NULL;
                size_t old = path_push_name(w, k);
                int r;

                int first = k[0] >= 'a' && k[0] <= 'z' ? k[0] - 'a' + 'A' : k[0];
                for (size_t i = 0; i < s->n_fields && !f; i++)
                        if (s->fields[i].name[0] == first && strcasecmp(s->fields[i].name, k) == 0)
                                f = &s->fields[i];
                if (!f)
                        return refuse(w, -EPERM, "is not a field the proxy knows");
                if (json_object_is_type(v, json_type_null) || (f->type == FIELD_ZERO && json_value_is_empty(v, true))) {
                        w->path[old] = 0;
                        continue;               /* absent to the engine */
                }
                /* the path as the engine documents it, for the record */
                w->path[old] = 0;
                path_push_name(w, f->name);
                r = rebuild_value(w, f, v, &o);
                if (r < 0)
                        return r;
                if (o) {
                        if (!json_value_is_empty(o, true) && f->type != FIELD_OBJECT && f->type != FIELD_OBJECTV && f->type != FIELD_OBJECTMAP)
                                note_field(w);
                        if (json_object_object_add(out, f->name, o) < 0) {
                                json_object_put(o);
                                return -ENOMEM;
                        }
                }
                w->path[old] = 0;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int proxy_body_rebuild(ProxyBodyKind kind, json_object *in, json_object **ret, char **ret_fields,
                       ProxyBodyRefusal *ret_refusal) {
        _cleanup_(json_object_putp) json_object *out = NULL;
        _cleanup_free_ char *fields = NULL;
        const Schema *s = schema_for(kind);
        Walk w = { .refusal = ret_refusal };
        int r;

        if (!s)
                return -EINVAL;
        if (in && !json_object_is_type(in, json_type_object))
                return refuse(&w, -EBADMSG, "the body is not a JSON object");
        if (ret_fields) {
                w.fields = fields = calloc(1, PROXY_BODY_FIELDS_LOG_MAX);
                if (!fields)
                        return -ENOMEM;
        }
        if (in)
                r = rebuild_object(&w, s, in, &out);
        else
                r = (out = json_object_new_object()) ? 0 : -ENOMEM;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        if (ret_fields)
                *ret_fields = TAKE_PTR(fields);
        return 0;
}

bool proxy_body_knows(ProxyBodyKind kind, const char *path) {
        const Schema *s = schema_for(kind);
        const Field *f = NULL;

        if (!s || !path)
                return false;
        for (const char *p = path; s;) {
                size_t n = strcspn(p, ".");
                f = NULL;
                for (size_t i = 0; i < s->n_fields && !f; i++)
                        if (strlen(s->fields[i].name) == n && strncasecmp(s->fields[i].name, p, n) == 0)
                                f = &s->fields[i];
                if (!f)
                        return false;
                if (!p[n])
                        return true;
                p += n + 1;
                if (f->type == FIELD_OBJECTMAP)         /* a map's key: any name */
                        p += strcspn(p, ".") + (p[strcspn(p, ".")] == '.');
                s = f->sub;
        }
        return false;
}
