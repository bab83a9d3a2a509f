//! Kernel interface file systems (procfs, sysfs, debugfs, ...): their files are not data but
//! the kernel's and other processes' state (`proc/<pid>/environ` holds a process's secrets,
//! `proc/sys/...` and `sys/...` writes change the kernel), wherever they are mounted. The
//! guardrail knows `/proc` and `/dev` by name; a mount of one of them elsewhere — a chroot or
//! image build tree's `rootfs/proc`, `rootfs/sys` inside the project (red team 4) — is found
//! by its file system type here.

use std::path::Path;

/// Whether `p` (a directory, symlinks followed) lies on a kernel interface file system; `true`
/// also when it cannot be told (`statfs` failed: the caller leaves the request).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn on_kernel_fs(p: &Path) -> bool {
    use nix::sys::statfs::statfs;
    // Magic numbers of linux/magic.h.
    const KERNEL_FS: &[i64] = &[
        0x9fa0,      // PROC_SUPER_MAGIC
        0x6265_6572, // SYSFS_MAGIC
        0x6462_6720, // DEBUGFS_MAGIC
        0x7472_6163, // TRACEFS_MAGIC
        0x7363_6673, // SECURITYFS_MAGIC
        0x0027_e0eb, // CGROUP_SUPER_MAGIC
        0x6367_7270, // CGROUP2_SUPER_MAGIC
        0xcafe_4a11, // BPF_FS_MAGIC
        0xde5e_81e4, // EFIVARFS_MAGIC
        0x6265_6570, // CONFIGFS_MAGIC
        0x6573_5543, // FUSECTL_SUPER_MAGIC
        0x6165_676c, // PSTOREFS_MAGIC
        0x1cd1,      // DEVPTS_SUPER_MAGIC
        0x4249_4e4d, // BINFMTFS_MAGIC
    ];
    match statfs(p) {
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        Ok(s) => {
            let t = s.filesystem_type().0 as i64;
            KERNEL_FS.contains(&t)
        }
        Err(_) => true,
    }
}

/// Other systems: no such file systems are known (the names `/proc` and `/dev` still are).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) fn on_kernel_fs(_p: &Path) -> bool {
    false
}
