/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The gateway's configuration, read once into EgressConfig: what is taken, what makes it unusable (and
 * says why), and that every secret in it is registered for redaction before anything could log it. */

#include <fcntl.h>
#include <sys/stat.h>

#include "audit.h"
#include "egress-config.h"
#include "tap.h"
#include "json-util.h"

static int from_json(const char *text, EgressConfig *ret) {
        _cleanup_(json_object_putp) json_object *doc = json_tokener_parse(text);
        return egress_config_from_json(doc, ret);
}

static bool redacted(const char *s) {
        _cleanup_free_ char *out = NULL;
        return audit_redact(s, &out) > 0 && !strstr(out, s);
}

static void test_defaults(void) {
        EgressConfig c = {};

        ok(from_json("{}", &c) == 0 && !c.error, "an empty document is a usable configuration");
        ok(c.policy && c.api.tls && streq_ptr(c.api.host, "api.anthropic.com") && c.api.port == 443,
           "the model API defaults to https://api.anthropic.com");
        ok(!c.proxy.host && !c.proxy_from && !c.api_key && !c.oauth_token && !c.ca_file, "nothing else is set");
        egress_config_done(&c);
}

static void test_values(void) {
        EgressConfig c = {};

        audit_clear_secrets();
        ok(from_json("{\"anthropic_api_key\": \"sk-ant-api-0123456789\", \"claude_code_oauth_token\": \"oauth-0123456789\","
                     " \"egress\": {\"api_upstream\": \"https://gw.example:8443/anthropic/\", \"ca_file\": \"/etc/ca.pem\","
                     " \"upstream_proxy\": \"http://proxyuser:proxy-password-1@proxy.example:3128\"}}", &c) == 0 && !c.error,
           "a full configuration is usable");
        ok(streq_ptr(c.api_key, "sk-ant-api-0123456789") && streq_ptr(c.oauth_token, "oauth-0123456789"), "the keys are taken");
        ok(streq_ptr(c.api.host, "gw.example") && c.api.port == 8443 && streq_ptr(c.api.base_path, "/anthropic"),
           "egress.api_upstream is taken apart");
        ok(streq_ptr(c.proxy.host, "proxy.example") && c.proxy.port == 3128 && c.proxy.authorization &&
           streq_ptr(c.proxy_from, "egress.upstream_proxy"), "egress.upstream_proxy and its credentials are taken");
        ok(streq_ptr(c.ca_file, "/etc/ca.pem"), "egress.ca_file is taken");
        ok(redacted("sk-ant-api-0123456789") && redacted("oauth-0123456789"), "the keys are registered for redaction");
        ok(redacted("proxy-password-1") && redacted("proxyuser:proxy-password-1") && redacted(c.proxy.authorization + 6),
           "the proxy's password is registered for redaction in each form");
        egress_config_done(&c);
        audit_clear_secrets();
}

static void test_environment_proxy(void) {
        EgressConfig c = {};

        (void) setenv("https_proxy", "http://envproxy.example:8080", 1);
        ok(from_json("{}", &c) == 0 && !c.error && streq_ptr(c.proxy.host, "envproxy.example") &&
           streq_ptr(c.proxy_from, "https_proxy"), "without egress.upstream_proxy, $https_proxy is the proxy");
        egress_config_done(&c);
        ok(from_json("{\"egress\": {\"upstream_proxy\": \"http://mine.example:3128\"}}", &c) == 0 &&
           streq_ptr(c.proxy.host, "mine.example"), "egress.upstream_proxy wins over the environment");
        egress_config_done(&c);
        (void) unsetenv("https_proxy");
}

static void test_unusable(void) {
        static const struct {
                const char *json, *error;
        } cases[] = {
                { "{\"egress\": {\"api_upstream\": \"http://api.example\"}}", "is not https://" },
                /* a password in egress.api_upstream is refused without being repeated in the journal */
                { "{\"egress\": {\"api_upstream\": \"https://u:secret-in-url@api.example\"}}", "is not an http(s)://" },
                { "{\"egress\": {\"api_upstream\": \"https://u:secret-in-url@api.example:99999\"}}", "is not an http(s)://" },
                { "{\"egress\": {\"api_upstream\": \"http://u:secret-in-url@api.example\"}}", "is not an http(s)://" },
                { "{\"egress\": {\"api_upstream\": \"ftp://api.example\"}}", "not a usable URL" },
                { "{\"egress\": {\"upstream_proxy\": \"https://proxy.example:3128\"}}", "upstream proxy" },
                { "{\"egress\": {\"upstream_proxy\": \"http://user:secret-in-url@proxy.example:99999\"}}", "upstream proxy" },
                { "{\"egress\": {\"rules\": 5}}", "does not compile" },
                { "[]", "not a JSON object" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                EgressConfig c = {};
                ok(from_json(cases[i].json, &c) == 0 && c.error && strstr(c.error, cases[i].error) &&
                   !strstr(c.error, "secret-in-url"), "%s: unusable, \"%s\"", cases[i].json, cases[i].error);
                egress_config_done(&c);
        }
}

static void test_load(void) {
        char dir[] = "/tmp/test-egress-config-XXXXXX", path[64];
        EgressConfig c = {};
        int fd;

        if (!mkdtemp(dir))
                abort();
        (void) snprintf(path, sizeof path, "%s/egress.json", dir);

        (void) unsetenv("CREDENTIALS_DIRECTORY");
        ok(egress_config_load(NULL, &c) == 0 && c.error && strstr(c.error, "CREDENTIALS_DIRECTORY"),
           "without $CREDENTIALS_DIRECTORY there is no configuration, and it says so");
        egress_config_done(&c);
        ok(egress_config_load(path, &c) == 0 && c.error && strstr(c.error, "cannot read"), "a missing file is unusable");
        egress_config_done(&c);

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, "{\"egress\": ", 11) != 11)
                abort();
        close(fd);
        ok(egress_config_load(path, &c) == 0 && c.error && strstr(c.error, "not a JSON object"), "a broken file is unusable");
        egress_config_done(&c);

        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0 || write(fd, "{\"anthropic_api_key\": \"sk-ant-file-0123\"}", 41) != 41)
                abort();
        close(fd);
        (void) setenv("CREDENTIALS_DIRECTORY", dir, 1);
        ok(egress_config_load(NULL, &c) == 0 && !c.error && streq_ptr(c.api_key, "sk-ant-file-0123"),
           "$CREDENTIALS_DIRECTORY/egress.json is read");
        egress_config_done(&c);
        (void) unsetenv("CREDENTIALS_DIRECTORY");

        (void) unlink(path);
        (void) rmdir(dir);
}

int main(void) {
        test_defaults();
        test_values();
        test_environment_proxy();
        test_unusable();
        test_load();
        return done_testing();
}
