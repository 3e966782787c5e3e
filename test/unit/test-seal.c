/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop seal: the tiers' rights per Landlock ABI, the policy derived from a container's mountinfo, the
 * refusal below ABI 3, and (in a child, on this kernel) that a sealed process really cannot write or
 * execute where its tiers say no. */

#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "macro.h"
#include "seal.h"
#include "strv.h"
#include "tap.h"

#define FS_TRUNCATE (1ULL << 14)
#define FS_IOCTL_DEV (1ULL << 15)

static const char mountinfo[] =
        "500 400 0:50 / / ro,relatime master:1 - overlay overlay rw,lowerdir=/l\n"
        "501 500 0:51 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
        "502 500 0:52 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
        "503 500 0:53 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=1048576k\n"
        "504 500 0:54 / /run rw,nosuid,nodev - tmpfs tmpfs rw,size=65536k,mode=755\n"
        "505 500 8:1 /srv/work /srv/work rw,relatime - ext4 /dev/sda1 rw\n"
        "506 505 8:1 /srv/work/.git/hooks /srv/work/.git/hooks ro,relatime - ext4 /dev/sda1 rw\n"
        "507 500 8:1 /var/lib/containers/storage/volumes/cache/_data /vol rw,relatime - ext4 /dev/sda1 rw\n"
        "508 504 0:26 /loop/demo/gate.sock /run/loop/gate.sock rw,nosuid,nodev - tmpfs tmpfs rw\n"
        "509 500 8:1 /etc/hosts /etc/hosts rw,relatime - ext4 /dev/sda1 rw\n"
        "510 500 8:1 /srv/my\\040dir /srv/my\\040dir rw,relatime - ext4 /dev/sda1 rw\n"
        "511 500 0:60 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n"
        "512 500 8:1 /home/u /home/u rw - ext4 /dev/sda1 rw\n";

static SealTier tier_of(const SealPolicy *p, const char *path) {
        for (unsigned t = 0; t < _SEAL_TIER_MAX; t++)
                if (strv_contains(p->paths[t], path))
                        return (SealTier) t;
        return _SEAL_TIER_MAX;
}

static void test_access(void) {
        ok(seal_abi_refusal(0) && seal_abi_refusal(2) && !seal_abi_refusal(3) && !seal_abi_refusal(7),
           "Landlock below ABI 3 (or none) is refused, 3 and later are accepted");
        ok(!(seal_tier_access(SEAL_READ_ONLY, 3) & ~(uint64_t) (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)),
           "read_only grants reading only");
        ok(seal_tier_access(SEAL_READ_EXEC, 3) & LANDLOCK_ACCESS_FS_EXECUTE &&
           !(seal_tier_access(SEAL_READ_EXEC, 3) & LANDLOCK_ACCESS_FS_WRITE_FILE), "read_exec adds execute, not write");
        ok(!(seal_tier_access(SEAL_WRITE_NOEXEC, 7) & LANDLOCK_ACCESS_FS_EXECUTE) &&
           seal_tier_access(SEAL_WRITE_NOEXEC, 7) & LANDLOCK_ACCESS_FS_MAKE_REG, "write_noexec writes but never executes");
        ok(seal_tier_access(SEAL_WRITE_EXEC, 3) & FS_TRUNCATE && seal_tier_access(SEAL_WRITE_EXEC, 3) & LANDLOCK_ACCESS_FS_REFER,
           "the write tiers carry truncate (ABI 3) and refer");
        ok(!(seal_tier_access(SEAL_WRITE_EXEC, 4) & FS_IOCTL_DEV) && seal_tier_access(SEAL_WRITE_EXEC, 5) & FS_IOCTL_DEV &&
           seal_tier_access(SEAL_WRITE_NOEXEC, 7) & FS_IOCTL_DEV, "device ioctls are granted in the write tiers from ABI 5");
        ok(seal_handled_access_fs(7) & FS_IOCTL_DEV && !(seal_handled_access_fs(3) & FS_IOCTL_DEV) &&
           seal_handled_access_fs(3) & FS_TRUNCATE, "the ruleset handles every right the ABI knows");
}

static void test_policy(void) {
        _cleanup_(seal_policy_done) SealPolicy p = {};
        SealPolicy bad = {};

        ok(seal_policy_from_mountinfo(mountinfo, "/srv/work", "/home/u", &p) == 0, "a container's mountinfo gives a policy");
        is_int(tier_of(&p, "/"), SEAL_READ_ONLY, "/ is read_only");
        is_int(tier_of(&p, "/usr"), SEAL_READ_EXEC, "/usr is read_exec");
        is_int(tier_of(&p, "/opt"), SEAL_READ_EXEC, "/opt (tools mounted read-only) is read_exec");
        is_int(tier_of(&p, "/dev"), SEAL_WRITE_NOEXEC, "/dev is write_noexec");
        is_int(tier_of(&p, "/proc"), SEAL_WRITE_NOEXEC, "/proc is write_noexec");
        is_int(tier_of(&p, "/tmp"), SEAL_WRITE_EXEC, "/tmp is write_exec");
        is_int(tier_of(&p, "/srv/work"), SEAL_WRITE_EXEC, "the work dir is write_exec");
        is_int(tier_of(&p, "/vol"), SEAL_WRITE_EXEC, "a read-write volume is write_exec (derived from the mounts)");
        is_int(tier_of(&p, "/srv/my dir"), SEAL_WRITE_EXEC, "mountinfo's octal escapes are decoded");
        is_int(tier_of(&p, "/home/u"), SEAL_WRITE_EXEC, "HOME is write_exec");
        is_int(tier_of(&p, "/srv/work/.git/hooks"), _SEAL_TIER_MAX, "a read-only mount adds nothing");
        is_int(tier_of(&p, "/run"), _SEAL_TIER_MAX, "/run stays read-only (under /)");
        is_int(tier_of(&p, "/run/loop/gate.sock"), _SEAL_TIER_MAX, "mounts under /run do not widen the policy");
        is_int(tier_of(&p, "/etc/hosts"), _SEAL_TIER_MAX, "nor do the engine's files under /etc");
        is_int(tier_of(&p, "/sys"), _SEAL_TIER_MAX, "nor /sys");
        ok(seal_policy_from_mountinfo("500 400 0:50\n", "/w", NULL, &bad) == -EBADMSG, "a mountinfo line that does not parse is an error");
        seal_policy_done(&bad);
}

static void test_ports(void) {
        SealPolicy p = {};

        ok(seal_parse_tcp_ports("443,8080", &p) == 0 && p.n_tcp_ports == 2 && p.tcp_ports[1] == 8080 && p.restrict_tcp,
           "--connect-tcp 443,8080 restricts TCP to two ports");
        p = (SealPolicy) {};
        {
                SealPolicy n = {};
                ok(seal_parse_tcp_ports("none", &n) == 0 && n.restrict_tcp && n.n_tcp_ports == 0,
                   "--connect-tcp none restricts TCP connect to no port at all");
        }
        ok(seal_parse_tcp_ports("0", &p) < 0, "port 0 is refused");
        p = (SealPolicy) {};
        ok(seal_parse_tcp_ports("70000", &p) < 0, "a port above 65535 is refused");
        p = (SealPolicy) {};
        ok(seal_parse_tcp_ports("443,", &p) < 0 && seal_parse_tcp_ports("x", &p) < 0 && seal_parse_tcp_ports("", &p) < 0,
           "junk is refused");
}

/* In a child: seal with "/" read-only and dir writable, then try. Returns a bit mask of outcomes. */
static int sealed_child(const char *dir, const char *outside) {
        pid_t pid = fork();
        int status;

        if (pid == 0) {
                SealPolicy p = {};
                char path[PATH_MAX];
                int result = 0, fd;

                if (strv_extend(&p.paths[SEAL_READ_ONLY], "/") < 0 || strv_extend(&p.paths[SEAL_WRITE_EXEC], dir) < 0 ||
                    seal_apply(&p, seal_landlock_abi()) < 0)
                        _exit(100);
                snprintf(path, sizeof path, "%s/inside", dir);
                fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                result |= fd >= 0 ? 1 : 0;
                fd = open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                result |= fd < 0 && errno == EACCES ? 2 : 0;
                result |= execl("/bin/true", "true", (char *) NULL) < 0 && errno == EACCES ? 4 : 0;
                _exit(result);
        }
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status);
}

static void test_enforced(void) {
        char dir[] = "/tmp/test-seal.XXXXXX", outside[] = "/tmp/test-seal-outside.XXXXXX", file[PATH_MAX];
        int r;

        if (seal_landlock_abi() < SEAL_ABI_REQUIRED) {
                ok(0, "this kernel has Landlock ABI 3 or later (needed to test the seal for real)");
                return;
        }
        ok(mkdtemp(dir) && mkdtemp(outside), "setup: two directories");
        snprintf(file, sizeof file, "%s/file", outside);
        r = sealed_child(dir, file);
        ok(r >= 0 && r != 100, "a child seals itself");
        ok(r >= 0 && r != 100 && (r & 1), "...and creates a file in its write_exec directory");
        ok(r >= 0 && r != 100 && (r & 2), "...but not elsewhere (EACCES)");
        ok(r >= 0 && r != 100 && (r & 4), "...and cannot execute from a read_only path (EACCES)");
        {
                char cmd[128];
                snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, outside);
                if (system(cmd) != 0)
                        abort();
        }
}

int main(void) {
        test_access();
        test_policy();
        test_ports();
        test_enforced();
        return done_testing();
}
