/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Docker API proxy's rebuilt bodies (src/dockerproxy/dockerproxy-body.h) and the floor forced on them
 * (src/dockerproxy/dockerproxy-nested.h). */

#include <stdlib.h>
#include <string.h>

#include "dockerproxy-body.h"
#include "dockerproxy-nested.h"
#include "dockerproxy-policy.h"
#include "json-util.h"
#include "macro.h"
#include "tap.h"

/* What docker run (CLI 20.10) sends for "docker run busybox echo hi". */
static const char cli_create[] =
"{\"Hostname\":\"\",\"Domainname\":\"\",\"User\":\"\",\"AttachStdin\":false,\"AttachStdout\":true,\"AttachStderr\":true,"
"\"Tty\":false,\"OpenStdin\":false,\"StdinOnce\":false,\"Env\":[],\"Cmd\":[\"echo\",\"hi\"],\"Image\":\"busybox\","
"\"Volumes\":{},\"WorkingDir\":\"\",\"Entrypoint\":null,\"OnBuild\":null,\"Labels\":{},"
"\"HostConfig\":{\"Binds\":null,\"ContainerIDFile\":\"\",\"LogConfig\":{\"Type\":\"\",\"Config\":{}},\"NetworkMode\":\"default\","
"\"PortBindings\":{},\"RestartPolicy\":{\"Name\":\"no\",\"MaximumRetryCount\":0},\"AutoRemove\":false,\"VolumeDriver\":\"\","
"\"VolumesFrom\":null,\"CapAdd\":null,\"CapDrop\":null,\"CgroupnsMode\":\"\",\"Dns\":[],\"DnsOptions\":[],\"DnsSearch\":[],"
"\"ExtraHosts\":null,\"GroupAdd\":null,\"IpcMode\":\"\",\"Cgroup\":\"\",\"Links\":null,\"OomScoreAdj\":0,\"PidMode\":\"\","
"\"Privileged\":false,\"PublishAllPorts\":false,\"ReadonlyRootfs\":false,\"SecurityOpt\":null,\"UTSMode\":\"\",\"UsernsMode\":\"\","
"\"ShmSize\":0,\"ConsoleSize\":[0,0],\"Isolation\":\"\",\"CpuShares\":0,\"Memory\":0,\"NanoCpus\":0,\"CgroupParent\":\"\","
"\"BlkioWeight\":0,\"BlkioWeightDevice\":[],\"BlkioDeviceReadBps\":null,\"BlkioDeviceWriteBps\":null,\"BlkioDeviceReadIOps\":null,"
"\"BlkioDeviceWriteIOps\":null,\"CpuPeriod\":0,\"CpuQuota\":0,\"CpuRealtimePeriod\":0,\"CpuRealtimeRuntime\":0,\"CpusetCpus\":\"\","
"\"CpusetMems\":\"\",\"Devices\":[],\"DeviceCgroupRules\":null,\"DeviceRequests\":null,\"KernelMemory\":0,\"KernelMemoryTCP\":0,"
"\"MemoryReservation\":0,\"MemorySwap\":0,\"MemorySwappiness\":null,\"OomKillDisable\":false,\"PidsLimit\":null,\"Ulimits\":null,"
"\"CpuCount\":0,\"CpuPercent\":0,\"IOMaximumIOps\":0,\"IOMaximumBandwidth\":0,\"MaskedPaths\":null,\"ReadonlyPaths\":null},"
"\"NetworkingConfig\":{\"EndpointsConfig\":{}}}";

static int rebuild(ProxyBodyKind kind, const char *text, json_object **ret, ProxyBodyRefusal *refusal) {
        _cleanup_(json_object_putp) json_object *in = NULL, *out = NULL;
        int r;

        r = proxy_body_parse(text, strlen(text), &in);
        if (r < 0)
                return r;
        r = proxy_body_rebuild(kind, in, &out, NULL, refusal);
        if (r >= 0 && ret)
                *ret = TAKE_PTR(out);
        return r;
}

/* A create whose HostConfig is hc: the result (0, -EPERM, -EBADMSG). */
static int create_hc(const char *hc) {
        _cleanup_free_ char *text = NULL;
        ProxyBodyRefusal refusal = {};

        if (asprintf(&text, "{\"Image\":\"busybox\",\"HostConfig\":%s}", hc) < 0)
                return -ENOMEM;
        return rebuild(PROXY_BODY_CONTAINER_CREATE, text, NULL, &refusal);
}

static void test_cli_create(void) {
        _cleanup_(json_object_putp) json_object *out = NULL;
        _cleanup_free_ char *fields = NULL;
        json_object *in = NULL, *hc = NULL, *v = NULL;
        ProxyBodyRefusal refusal = {};

        is_int(proxy_body_parse(cli_create, strlen(cli_create), &in), 0, "the CLI's create body parses");
        is_int(proxy_body_rebuild(PROXY_BODY_CONTAINER_CREATE, in, &out, &fields, &refusal), 0,
               "the docker CLI's create body is rebuilt (its zero values of refused fields are absent values)");
        json_object_put(in);
        ok(!json_object_object_get_ex(json_object_object_get(out, "HostConfig"), "Privileged", NULL),
           "Privileged false is left out of the rebuilt body");
        ok(json_object_object_get_ex(out, "HostConfig", &hc) && json_object_object_get_ex(hc, "NetworkMode", &v) &&
           streq(json_object_get_string(v), "default"), "NetworkMode default is kept");
        ok(fields && strstr(fields, "Cmd") && strstr(fields, "Image") && strstr(fields, "HostConfig.NetworkMode"),
           "the fields with values are listed for the record (%s)", strna(fields));
        ok(fields && !strstr(fields, "Privileged"), "zero fields are not listed");
}

static void test_case_and_unknown(void) {
        _cleanup_(json_object_putp) json_object *out = NULL;
        ProxyBodyRefusal refusal = {};

        is_int(rebuild(PROXY_BODY_CONTAINER_CREATE, "{\"image\":\"busybox\",\"hostconfig\":{\"readonlyrootfs\":true}}", &out, &refusal), 0,
               "fields match ignoring case");
        ok(json_object_object_get_ex(out, "Image", NULL) && json_object_object_get_ex(out, "HostConfig", NULL) &&
           json_object_object_get_ex(json_object_object_get(out, "HostConfig"), "ReadonlyRootfs", NULL),
           "...and are written as the engine documents them");
        is_int(rebuild(PROXY_BODY_CONTAINER_CREATE, "{\"Image\":\"x\",\"Bogus\":1}", NULL, &refusal), -EPERM, "an unknown field is refused");
        is_str(refusal.field, "Bogus", "...naming it");
        is_str(refusal.reason, "is not a field the proxy knows", "...saying why");
        is_int(create_hc("{\"Annotations\":{\"run.oci.keep_original_groups\":\"1\"}}"), -EPERM, "Annotations are refused");
        is_int(create_hc("{\"CpuQuota\":1.5}"), -EBADMSG, "a float for an integer is refused");
        is_int(create_hc("{\"Memory\":-5}"), -EPERM, "a negative memory limit is refused");
        is_int(create_hc("{\"ReadonlyRootfs\":\"yes\"}"), -EBADMSG, "a string for a boolean is refused");
        is_int(rebuild(PROXY_BODY_CONTAINER_CREATE, "[1]", NULL, &refusal), -EBADMSG, "a body that is not an object is refused");
        is_int(rebuild(PROXY_BODY_NONE, "{\"HostConfig\":{}}", NULL, &refusal), -EPERM, "an endpoint without a body takes no field");
}

static void test_classes(void) {
        /* issue 17, class 3 */
        is_int(create_hc("{\"LogConfig\":{\"Type\":\"k8s-file\",\"Config\":{\"path\":\"/etc/cron.d/x\"}}}"), -EPERM,
               "LogConfig with path= is refused");
        is_int(create_hc("{\"LogConfig\":{\"Type\":\"syslog\"}}"), -EPERM, "the syslog log driver is refused");
        is_int(create_hc("{\"LogConfig\":{\"Type\":\"json-file\",\"Config\":{}}}"), 0, "json-file without options is allowed");
        is_int(create_hc("{\"LogConfig\":{\"Type\":\"journald\"}}"), 0, "journald is allowed");
        is_int(create_hc("{\"Binds\":[\"/w:/x:O,upperdir=/root,workdir=/tmp\"]}"), -EPERM, "overlay bind options are refused");
        is_int(create_hc("{\"Binds\":[\"/w:/x:O\"]}"), -EPERM, "the overlay bind option O is refused");
        is_int(create_hc("{\"Binds\":[\"/w:/x:idmap\"]}"), -EPERM, "idmap is refused");
        is_int(create_hc("{\"Binds\":[\"/w:/x:U\"]}"), -EPERM, "U (chown the source) is refused");
        is_int(create_hc("{\"Binds\":[\"/w:/x:suid\"]}"), -EPERM, "suid is refused");
        is_int(create_hc("{\"Binds\":[\"/w:/x:rshared\"]}"), -EPERM, "shared propagation is refused");
        is_int(create_hc("{\"Binds\":[\"/w:/x:ro,Z\"]}"), 0, "ro,Z is allowed");
        is_int(create_hc("{\"Binds\":[\"vol:/x\"]}"), 0, "a named volume is allowed");
        is_int(create_hc("{\"Binds\":[\"/w:x\"]}"), -EPERM, "a relative target is refused");
        is_int(create_hc("{\"PidMode\":\"ns:/proc/self/ns/pid\"}"), -EPERM, "PidMode by path is refused");
        is_int(create_hc("{\"IpcMode\":\"ns:/proc/1/ns/ipc\"}"), -EPERM, "IpcMode by path is refused");
        is_int(create_hc("{\"UTSMode\":\"ns:/proc/1/ns/uts\"}"), -EPERM, "UTSMode by path is refused");
        is_int(create_hc("{\"UsernsMode\":\"keep-id\"}"), -EPERM, "a user namespace mode is refused");
        is_int(create_hc("{\"NetworkMode\":\"ns:/proc/1/ns/net\"}"), -EPERM, "NetworkMode by path is refused");
        is_int(create_hc("{\"NetworkMode\":\"slirp4netns\"}"), -EPERM, "NetworkMode slirp4netns is refused");
        is_int(create_hc("{\"NetworkMode\":\"host\"}"), -EPERM, "NetworkMode host is refused");
        is_int(create_hc("{\"PidMode\":\"container:abc\"}"), 0, "PidMode container:ID is allowed (ownership is checked)");
        is_int(create_hc("{\"SecurityOpt\":[\"no-new-privileges\",\"no-new-privileges=0\"]}"), -EPERM,
               "a later no-new-privileges=0 is refused");
        is_int(create_hc("{\"SecurityOpt\":[\"no-new-privileges:false\"]}"), -EPERM, "no-new-privileges:false is refused");
        is_int(create_hc("{\"SecurityOpt\":[\"label=disable\"]}"), -EPERM, "label=disable is refused");
        is_int(create_hc("{\"SecurityOpt\":[\"apparmor=unconfined\"]}"), -EPERM, "apparmor options are refused");
        is_int(create_hc("{\"SecurityOpt\":[\"mask=/etc/passwd\"]}"), -EPERM, "a mask outside /proc and /sys is refused");
        is_int(create_hc("{\"SecurityOpt\":[\"no-new-privileges=true\",\"mask=/proc/x\"]}"), 0, "no-new-privileges=true and mask= are allowed");
        is_int(create_hc("{\"Links\":[\"other:o\"]}"), -EPERM, "Links are refused");
        is_int(create_hc("{\"Links\":[]}"), 0, "an empty Links is nothing");
        is_int(create_hc("{\"CapAdd\":[\"CHOWN\"]}"), -EPERM, "CapAdd CHOWN is refused (the floor drops it on binds)");
        is_int(create_hc("{\"CapAdd\":[\"cap_net_bind_service\"]}"), 0, "CapAdd NET_BIND_SERVICE is allowed");
        is_int(create_hc("{\"Privileged\":true}"), -EPERM, "Privileged true is refused");
        is_int(create_hc("{\"Devices\":[{\"PathOnHost\":\"/dev/sda\"}]}"), -EPERM, "Devices are refused");
        is_int(create_hc("{\"Sysctls\":{\"kernel.x\":\"1\"}}"), -EPERM, "Sysctls are refused");
        is_int(create_hc("{\"PidsLimit\":-1}"), -EPERM, "PidsLimit -1 at create is refused");
        is_int(create_hc("{\"PidsLimit\":4096}"), -EPERM, "a PidsLimit above the floor is refused");
        is_int(create_hc("{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/w\",\"Target\":\"/x\",\"BindOptions\":{\"Propagation\":\"rshared\"}}]}"),
               -EPERM, "a Mounts bind with shared propagation is refused");
        is_int(create_hc("{\"Mounts\":[{\"Type\":\"image\",\"Source\":\"x\",\"Target\":\"/x\"}]}"), -EPERM, "a Mounts type image is refused");
        is_int(create_hc("{\"Mounts\":[{\"Type\":\"volume\",\"Source\":\"v\",\"Target\":\"/x\",\"VolumeOptions\":{\"DriverConfig\":{\"Name\":\"local\"}}}]}"),
               -EPERM, "a Mounts volume with a driver config is refused");
        is_int(create_hc("{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/w\",\"Target\":\"/x\",\"ReadOnly\":true}]}"), 0, "a read-only Mounts bind is allowed");
        is_int(create_hc("{\"Ulimits\":[{\"Name\":\"rtprio\",\"Soft\":99,\"Hard\":99}]}"), -EPERM, "a rtprio ulimit is refused");
        is_int(create_hc("{\"OomScoreAdj\":-1000}"), -EPERM, "a negative OomScoreAdj is refused");

        is_int(rebuild(PROXY_BODY_CONTAINER_UPDATE, "{\"PidsLimit\":-1}", NULL, NULL), -EPERM, "update with PidsLimit -1 is refused");
        is_int(rebuild(PROXY_BODY_CONTAINER_UPDATE, "{\"PidsLimit\":100000}", NULL, NULL), -EPERM, "update with a PidsLimit above the floor is refused");
        is_int(rebuild(PROXY_BODY_CONTAINER_UPDATE, "{\"PidsLimit\":100,\"Memory\":1048576}", NULL, NULL), 0, "update within the floor is allowed");
        is_int(rebuild(PROXY_BODY_CONTAINER_UPDATE, "{\"Privileged\":true}", NULL, NULL), -EPERM, "update to privileged is refused");
        is_int(rebuild(PROXY_BODY_CONTAINER_UPDATE, "{\"Devices\":[{\"PathOnHost\":\"/dev/sda\"}]}", NULL, NULL), -EPERM, "update with devices is refused");
        is_int(rebuild(PROXY_BODY_CONTAINER_UPDATE, "{\"CgroupParent\":\"/\"}", NULL, NULL), -EPERM, "update of the cgroup parent is refused");
        is_int(rebuild(PROXY_BODY_EXEC_CREATE, "{\"Cmd\":[\"sh\"],\"Privileged\":true}", NULL, NULL), -EPERM, "a privileged exec is refused");
        is_int(rebuild(PROXY_BODY_EXEC_CREATE, "{\"Cmd\":[\"sh\"],\"AttachStdout\":true,\"User\":\"1000\"}", NULL, NULL), 0, "an ordinary exec is allowed");
        is_int(rebuild(PROXY_BODY_VOLUME_CREATE, "{\"Name\":\"v\",\"DriverOpts\":{\"type\":\"none\",\"o\":\"bind\",\"device\":\"/etc\"}}", NULL, NULL),
               -EPERM, "a volume binding a host path is refused");
        is_int(rebuild(PROXY_BODY_VOLUME_CREATE, "{\"Name\":\"v\",\"DriverOpts\":{\"type\":\"tmpfs\",\"device\":\"tmpfs\",\"o\":\"size=64m,nosuid\"}}", NULL, NULL),
               0, "a tmpfs volume is allowed");
        is_int(rebuild(PROXY_BODY_VOLUME_CREATE, "{\"Name\":\"v\",\"Driver\":\"nfs\"}", NULL, NULL), -EPERM, "another volume driver is refused");
        is_int(rebuild(PROXY_BODY_NETWORK_CREATE, "{\"Name\":\"n\",\"Driver\":\"macvlan\"}", NULL, NULL), -EPERM, "a macvlan network is refused");
        is_int(rebuild(PROXY_BODY_NETWORK_CREATE, "{\"Name\":\"n\",\"Options\":{\"com.docker.network.bridge.name\":\"eth0\"}}", NULL, NULL),
               -EPERM, "bridge options naming host interfaces are refused");
        is_int(rebuild(PROXY_BODY_NETWORK_CREATE, "{\"Name\":\"host\"}", NULL, NULL), -EPERM, "a network named host is refused");
        is_int(rebuild(PROXY_BODY_NETWORK_CREATE, "{\"Name\":\"n\",\"IPAM\":{\"Config\":[{\"Subnet\":\"10.0.0.0/8\"}]}}", NULL, NULL),
               -EPERM, "a network with a subnet of the caller's is refused (the host would route it to the bridge)");
        is_int(rebuild(PROXY_BODY_NETWORK_CREATE, "{\"Name\":\"slirp4netns\"}", NULL, NULL), -EPERM, "a network named slirp4netns is refused");
        is_int(rebuild(PROXY_BODY_NETWORK_CREATE,
                       "{\"Name\":\"n\",\"CheckDuplicate\":true,\"Driver\":\"bridge\",\"Scope\":\"\",\"EnableIPv6\":false,\"IPAM\":{\"Driver\":\"default\",\"Options\":{},\"Config\":[]},"
                       "\"Internal\":false,\"Attachable\":false,\"Ingress\":false,\"ConfigOnly\":false,\"ConfigFrom\":null,\"Options\":{},\"Labels\":{}}",
                       NULL, NULL), 0, "the docker CLI's network create body is rebuilt");
}

/* Property: a field name the table does not know is refused wherever it is put, whatever its value. */
static void test_unknown_field_property(void) {
        static const char * const parents[] = { "", "HostConfig.", "HostConfig.LogConfig.", "HostConfig.RestartPolicy.",
                                                "NetworkingConfig.", "NetworkingConfig.EndpointsConfig.n.", "Healthcheck." };
        static const char * const values[] = { "true", "1", "\"x\"", "[\"/:/x\"]", "{\"a\":\"b\"}", "0", "\"\"" };
        unsigned seed = 7, refused = 0, known = 0, wrong = 0;

        for (unsigned i = 0; i < 20000; i++) {
                char name[16], path[96], text[512];
                size_t len = 1 + (seed = seed * 1103515245 + 12345) / 65536 % 12;
                for (size_t j = 0; j < len; j++) {
                        static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
                        name[j] = alphabet[(seed = seed * 1103515245 + 12345) / 65536 % (sizeof(alphabet) - 1)];
                }
                name[len] = 0;
                const char *parent = parents[(seed = seed * 1103515245 + 12345) / 65536 % ELEMENTSOF(parents)];
                const char *value = values[(seed = seed * 1103515245 + 12345) / 65536 % ELEMENTSOF(values)];
                snprintf(path, sizeof(path), "%s%s", parent, name);
                /* the JSON: each parent segment an object */
                size_t o = 0;
                int depth = 0;
                for (const char *p = path; *p;) {
                        size_t n = strcspn(p, ".");
                        o += (size_t) snprintf(text + o, sizeof(text) - o, "{\"%.*s\":", (int) n, p);
                        depth++;
                        p += n + (p[n] == '.');
                }
                o += (size_t) snprintf(text + o, sizeof(text) - o, "%s", value);
                while (depth-- > 0)
                        o += (size_t) snprintf(text + o, sizeof(text) - o, "}");
                ProxyBodyRefusal refusal = {};
                int r = rebuild(PROXY_BODY_CONTAINER_CREATE, text, NULL, &refusal);
                if (proxy_body_knows(PROXY_BODY_CONTAINER_CREATE, path)) {
                        known++;
                        continue;
                }
                if (r == -EPERM && streq_ptr(refusal.reason, "is not a field the proxy knows") &&
                    strcasecmp(refusal.field, path) == 0)
                        refused++;
                else if (wrong++ < 5)
                        diag(text);
        }
        ok(refused > 10000, "random unknown fields are refused (%u, %u known ones skipped)", refused, known);
        is_int((int) wrong, 0, "no field the table does not know is let through, at any depth");
}

static void test_floor(void) {
        _cleanup_(json_object_putp) json_object *body = NULL;
        json_object *hc, *secopt, *capdrop, *binds;
        const char *last;

        is_int(rebuild(PROXY_BODY_CONTAINER_CREATE,
                       "{\"Image\":\"x\",\"HostConfig\":{\"SecurityOpt\":[\"no-new-privileges=true\",\"mask=/proc/x\"],"
                       "\"CapAdd\":[\"KILL\"],\"CapDrop\":[\"NET_RAW\"],\"Binds\":[\"/w:/x\",\"/v:/y:ro\"],"
                       "\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/m\",\"Target\":\"/z\",\"ReadOnly\":true}]}}",
                       &body, NULL), 0, "a create to force the floor on");
        is_int(proxy_container_force(body, &(ProxyNestedPolicy) { .channel = "c", .podman = true,
                                                                  .seccomp_option = "seccomp=/p.json" }), 0, "the floor is forced");
        hc = json_object_object_get(body, "HostConfig");
        secopt = json_object_object_get(hc, "SecurityOpt");
        capdrop = json_object_object_get(hc, "CapDrop");
        binds = json_object_object_get(hc, "Binds");
        size_t n_nnp = 0, nnp_at = 0;
        for (size_t i = 0; i < json_object_array_length(secopt); i++)
                if (startswith(json_object_get_string(json_object_array_get_idx(secopt, i)), "no-new-privileges")) {
                        n_nnp++;
                        nnp_at = i;
                }
        is_int((int) n_nnp, 1, "one no-new-privileges, the proxy's");
        ok(nnp_at > 0, "...after the caller's options");
        last = json_object_get_string(json_object_array_get_idx(secopt, json_object_array_length(secopt) - 1));
        is_str(last, "seccomp=/p.json", "the workload profile comes last");
        is_int((int) json_object_array_length(capdrop), 1, "CapDrop is one entry");
        is_str(json_object_get_string(json_object_array_get_idx(capdrop, 0)), "ALL", "...ALL");
        is_str(json_object_get_string(json_object_array_get_idx(binds, 0)), "/w:/x:nosuid,nodev", "a bind gets nosuid,nodev on Podman");
        is_str(json_object_get_string(json_object_array_get_idx(binds, 1)), "/v:/y:ro,nosuid,nodev", "...after its own options");
        is_str(json_object_get_string(json_object_array_get_idx(binds, 2)), "/m:/z:ro,nosuid,nodev", "a Mounts bind becomes a bind with them");
        is_int((int) json_object_array_length(json_object_object_get(hc, "Mounts")), 0, "...and leaves Mounts");
        is_int(json_object_get_int(json_object_object_get(hc, "PidsLimit")), PROXY_PIDS_LIMIT, "the pids limit is the floor's");
}

static void test_values(void) {
        const char *why;
        ok(proxy_bind_spec_is_allowed("/a:/b:ro,nosuid", &why), "ro,nosuid is a bind the proxy allows");
        ok(!proxy_bind_spec_is_allowed("/a", &why), "a bind without a target is refused");
        ok(!proxy_bind_spec_is_allowed("/a:/b:ro:z", &why), "a bind with two option fields is refused");
        ok(!proxy_bind_spec_is_allowed("../a:/b", &why), "a relative source that is no volume name is refused");
        ok(proxy_security_opt_is_allowed("unmask=/proc/version"), "unmask of a /proc path is taken (and dropped by the floor)");
        ok(!proxy_security_opt_is_allowed("seccomp=unconfined"), "seccomp= is refused");
        ok(!proxy_capability_may_be_added("SYS_ADMIN"), "SYS_ADMIN may not be added");
        ok(!proxy_capability_may_be_added("ALL"), "ALL may not be added");
        ok(proxy_network_name_is_allowed("mynet"), "an ordinary network name is allowed");
        ok(!proxy_network_name_is_allowed("Host"), "Host in any case is refused");
        ok(proxy_name_is_channels("web", "web-data"), "web-data is channel web's name");
        ok(proxy_name_is_channels("web", "web_default"), "web_default (compose's) is channel web's name");
        ok(!proxy_name_is_channels("web", "webdata"), "webdata is not channel web's (no separator)");
        ok(!proxy_name_is_channels("web", "web-"), "web- alone is not a name");
        ok(!proxy_name_is_channels("web", "web2-data"), "web2-data is channel web2's, not web's");
        ok(!proxy_name_is_channels("web", "data"), "data is no channel's");
}

int main(void) {
        test_cli_create();
        test_case_and_unknown();
        test_classes();
        test_unknown_field_property();
        test_floor();
        test_values();
        return done_testing();
}
