/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <stdarg.h>

#include "audit.h"
#include "egress-config.h"
#include "io-util.h"
#include "json-util.h"
#include "string-util.h"

void egress_config_done(EgressConfig *c) {
        free(c->error);
        egress_policy_free(c->policy);
        egress_upstream_done(&c->api);
        egress_upstream_done(&c->proxy);
        if (c->api_key) {
                explicit_bzero(c->api_key, strlen(c->api_key));
                free(c->api_key);
        }
        if (c->oauth_token) {
                explicit_bzero(c->oauth_token, strlen(c->oauth_token));
                free(c->oauth_token);
        }
        free(c->ca_file);
        *c = (EgressConfig) {};
}

static int config_fail(EgressConfig *c, const char *format, ...) _printf_(2, 3);
static int config_fail(EgressConfig *c, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = strprintf_va(&c->error, format, ap);
        va_end(ap);
        return r;
}

static const char *json_str(json_object *o, const char *key) {
        json_object *v;
        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

/* The proxy's credentials, redacted by value from every log line, in the forms they could take. */
static int proxy_secrets_register(const char *url, const EgressUpstream *proxy) {
        const char *at = strrchr(url, '@'), *userinfo = strstr(url, "://");
        _cleanup_free_ char *raw = NULL;
        const char *password;
        int r = 0;

        if (!at || !userinfo || at < userinfo + 3)
                return -EINVAL;
        userinfo += 3;
        raw = strndup(userinfo, (size_t) (at - userinfo));
        if (!raw)
                return -ENOMEM;
        password = strchr(raw, ':');
        if (audit_add_secret(raw) < 0 || (password && !isempty(password + 1) && audit_add_secret(password + 1) < 0) ||
            audit_add_secret(proxy->authorization + strlen("Basic ")) < 0)
                r = -ENOMEM;
        explicit_bzero(raw, strlen(raw));
        return r;
}

static int config_parse(json_object *doc, EgressConfig *c) {
        _cleanup_free_ char *error = NULL, *api_host = NULL;
        json_object *egress = NULL;
        const char *s, *from_env = NULL;
        int r;

        /* Secrets first, so that nothing logged from here on can carry them. */
        s = json_str(doc, "anthropic_api_key");
        if (!isempty(s) && (!(c->api_key = strdup(s)) || audit_add_secret(s) < 0))
                return -ENOMEM;
        s = json_str(doc, "claude_code_oauth_token");
        if (!isempty(s) && (!(c->oauth_token = strdup(s)) || audit_add_secret(s) < 0))
                return -ENOMEM;

        (void) json_object_object_get_ex(doc, "egress", &egress);
        r = egress_config_api_host(doc, &api_host);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_fail(c, "egress.api_upstream is not a usable URL");
        r = egress_policy_compile(egress, api_host, &c->policy, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_fail(c, "the egress policy does not compile: %s", strna(error));
        for (size_t i = 0; i < c->policy->n_rules; i++)
                if (c->policy->rules[i].decision == EGRESS_CREDENTIAL && audit_add_secret(c->policy->rules[i].credential.secret) < 0)
                        return -ENOMEM;

        s = json_str(egress, "api_upstream");
        r = egress_upstream_parse(isempty(s) ? EGRESS_API_UPSTREAM_DEFAULT : s, &c->api);
        if (r == -ENOMEM)
                return r;
        if (r >= 0 && c->api.authorization)
                r = -EINVAL;
        /* not echoed when it has a USER:PASSWORD@ part (or anything with an @): the journal gets the reason */
        if (r < 0 && s && strchr(s, '@'))
                return config_fail(c, "egress.api_upstream is not an http(s)://HOST[:PORT][/PATH] URL: it has a "
                                      "USER:PASSWORD@ part (not repeated here); the model API's credential is "
                                      "anthropic_api_key or claude_code_oauth_token");
        if (r < 0)
                return config_fail(c, "egress.api_upstream \"%s\" is not an http(s)://HOST[:PORT][/PATH] URL", s);
        /* the real key goes only into TLS the gateway made and verified */
        if (!c->api.tls)
                return config_fail(c, "egress.api_upstream \"%s\" is not https://: the real key is never sent in clear text", s);

        /* Without egress.upstream_proxy, the host's own proxy variables, as the service's environment has
         * them (DefaultEnvironment= of the manager, or a drop-in): the gateway goes out the way the host
         * does. */
        s = json_str(egress, "upstream_proxy");
        if (isempty(s)) {
                static const char * const proxy_variables[] = { "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY" };
                for (size_t i = 0; i < ELEMENTSOF(proxy_variables) && isempty(s); i++)
                        if (!isempty(s = getenv(proxy_variables[i])))
                                from_env = proxy_variables[i];
        }
        if (!isempty(s)) {
                c->proxy_from = from_env ?: "egress.upstream_proxy";
                r = egress_upstream_parse(s, &c->proxy);
                if (r == -ENOMEM)
                        return r;
                /* not echoed: a proxy URL may carry a password */
                if (r < 0 || c->proxy.tls)
                        return config_fail(c, "the upstream proxy (egress.upstream_proxy, or the service's "
                                              "https_proxy/http_proxy) is not an http://[USER:PASSWORD@]HOST:PORT URL");
                if (c->proxy.authorization) {
                        r = proxy_secrets_register(s, &c->proxy);
                        if (r < 0)
                                return r;
                }
        }

        s = json_str(egress, "ca_file");
        if (!isempty(s) && !(c->ca_file = strdup(s)))
                return -ENOMEM;
        return 0;
}

int egress_config_from_json(json_object *doc, EgressConfig *ret) {
        EgressConfig c = {};
        int r;

        if (!doc || !json_object_is_type(doc, json_type_object))
                r = config_fail(&c, "the configuration is not a JSON object");
        else
                r = config_parse(doc, &c);
        if (r < 0) {
                egress_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int egress_config_load(const char *path, EgressConfig *ret) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *text = NULL, *config_path = NULL;
        EgressConfig c = {};
        const char *dir;
        size_t size;
        int r;

        if (!path) {
                dir = getenv("CREDENTIALS_DIRECTORY");
                if (isempty(dir)) {
                        r = config_fail(&c, "no egress.json credential ($CREDENTIALS_DIRECTORY is not set)");
                        goto finish;
                }
                if (asprintf(&config_path, "%s/egress.json", dir) < 0)
                        return -ENOMEM;
                path = config_path;
        }
        r = read_full_file_at(AT_FDCWD, path, EGRESS_CONFIG_SIZE_MAX, true, &text, &size);
        if (r < 0) {
                r = config_fail(&c, "cannot read %s: %s", path, strerror(-r));
                goto finish;
        }
        doc = json_tokener_parse(text);
        explicit_bzero(text, size);
        if (!doc || !json_object_is_type(doc, json_type_object)) {
                r = config_fail(&c, "%s is not a JSON object", path);
                goto finish;
        }
        r = config_parse(doc, &c);
finish:
        if (r < 0) {
                egress_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}
