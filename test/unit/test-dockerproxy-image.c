/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Image references as the engines read them (src/dockerproxy/dockerproxy-image.h). */

#include <stdlib.h>

#include "dockerproxy-image.h"
#include "macro.h"
#include "tap.h"

static char *normalized(const char *ref) {
        _cleanup_(proxy_image_ref_done) ProxyImageRef r = {};

        if (proxy_image_ref_parse(ref, &r) < 0)
                return NULL;
        return proxy_image_ref_format(&r);
}

#define is_norm(ref, want, name) ({ _cleanup_free_ char *_n = normalized(ref); is_str(_n, want, name); })
#define refused(ref, name) ({ _cleanup_free_ char *_n = normalized(ref); ok(_n == NULL, name); })

static void test_normalize(void) {
        is_norm("busybox", "docker.io/library/busybox:latest", "a short name is docker.io/library/...:latest");
        is_norm("loop-agent", "docker.io/library/loop-agent:latest", "loop-agent is docker.io/library/loop-agent");
        is_norm("index.docker.io/loop-agent", "docker.io/library/loop-agent:latest", "index.docker.io folds to docker.io");
        is_norm("registry-1.docker.io/loop-agent:v1", "docker.io/library/loop-agent:v1", "registry-1.docker.io folds to docker.io");
        is_norm("docker.io/library/loop-agent", "docker.io/library/loop-agent:latest", "docker.io/library is itself");
        is_norm("Index.Docker.IO/loop-agent", "docker.io/library/loop-agent:latest", "the domain's case folds");
        is_norm("library/busybox:1", "docker.io/library/busybox:1", "library/ without a domain is docker.io's");
        is_norm("user/app", "docker.io/user/app:latest", "a two-component path on docker.io has no library/");
        is_norm("localhost/loop-agent", "localhost/loop-agent:latest", "localhost is a domain");
        is_norm("localhost:5000/a/b:t", "localhost:5000/a/b:t", "a domain with a port");
        is_norm("quay.io/x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "quay.io/x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "a digest is kept, no tag added");
        is_norm("a__b.c-d---e", "docker.io/library/a__b.c-d---e:latest", "the separators of a component");
        refused("Busybox", "upper case in the path is refused");
        refused("a//b", "an empty component is refused");
        refused("a/", "a trailing slash is refused");
        refused("-a", "a component starting with a separator is refused");
        refused("a___b", "three underscores are refused");
        refused("a:", "an empty tag is refused");
        refused("a:.x", "a tag starting with a dot is refused");
        refused("a@sha256:12", "a short digest is refused");
        refused("", "an empty reference is refused");
        refused("a b", "a space is refused");
}

static void test_protected(void) {
        char *protected[] = { (char *) "my-agent:latest", (char *) "quay.io/corp/chrome:1", NULL };

        ok(proxy_image_ref_is_protected("loop-agent", protected), "loop-agent is protected");
        ok(proxy_image_ref_is_protected("index.docker.io/loop-agent:evil", protected), "index.docker.io/loop-agent is protected");
        ok(proxy_image_ref_is_protected("registry-1.docker.io/library/loop-chrome", protected), "registry-1.docker.io/library/loop-chrome is");
        ok(proxy_image_ref_is_protected("localhost/loop-agent", protected), "localhost/loop-agent is (Podman's local name)");
        ok(proxy_image_ref_is_protected("evil.example/loop-agent", protected), "loop-agent on any domain is");
        ok(proxy_image_ref_is_protected("my-agent", protected), "a configured agent image is, by its repository");
        ok(proxy_image_ref_is_protected("docker.io/library/my-agent:other", protected), "...under another tag too");
        ok(proxy_image_ref_is_protected("quay.io/corp/chrome", protected), "a configured image with a domain is");
        ok(proxy_image_ref_is_protected("corp/chrome", protected), "...and its path on docker.io (Podman's search registries)");
        ok(proxy_image_ref_is_protected("Loop-Agent", protected), "a reference that does not parse is refused");
        ok(!proxy_image_ref_is_protected("busybox", protected), "busybox is not protected");
        ok(!proxy_image_ref_is_protected("my-agent-tests", protected), "a repository that only begins like a protected one is not");
        ok(!proxy_image_ref_is_protected("proxy-built-docker:latest", NULL), "an agent's own image is not");
}

static void test_channels(void) {
        ok(proxy_image_ref_is_channels("chan-app", "chan"), "CHANNEL-app is the channel's");
        ok(proxy_image_ref_is_channels("docker.io/library/chan_app:v1", "chan"), "CHANNEL_app under docker.io/library is");
        ok(proxy_image_ref_is_channels("localhost/chan-app/sub:v1", "chan"), "localhost/CHANNEL-app/sub is (the first component decides)");
        ok(proxy_image_ref_is_channels("index.docker.io/chan-app", "chan"), "index.docker.io/CHANNEL-app is (folded)");
        ok(!proxy_image_ref_is_channels("other-app", "chan"), "another channel's name is not");
        ok(!proxy_image_ref_is_channels("chan", "chan"), "the bare channel name is not (a separator and more)");
        ok(!proxy_image_ref_is_channels("chan-", "chan"), "CHANNEL- with nothing after it is not");
        ok(!proxy_image_ref_is_channels("channel2-app", "chan"), "a name that only begins with the channel's is not");
        ok(!proxy_image_ref_is_channels("other/chan-app", "chan"), "CHANNEL-app under another's first component is not");
        ok(!proxy_image_ref_is_channels("Chan-app", "chan"), "a reference that does not parse is not");
        ok(!proxy_image_ref_is_channels("chan-app", ""), "no channel: nothing is its");
        ok(!proxy_image_ref_is_channels("web-app", "Web") && !proxy_image_ref_is_channels("Web-app", "Web"),
           "a channel named with capital letters has no image names, not even its name lower-cased");
        ok(!proxy_channel_names_images("Web"), "...and is told so (it names no images)");
        ok(proxy_channel_names_images("web.v2") && proxy_channel_names_images("w_1"), "lower-case channel names name images");
        ok(!proxy_channel_names_images("web..x"), "...as far as the reference grammar takes them");
}

int main(void) {
        test_normalize();
        test_protected();
        test_channels();
        return done_testing();
}
