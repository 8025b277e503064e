//! The container a process runs in, as far as Linux shows it: the runtime (Docker,
//! containerd, CRI-O, Podman, Kubernetes), the container's id from the process's cgroup path
//! or from the files Docker and Podman bind-mount into it, and its image where the
//! environment or Podman's `/run/.containerenv` names it.
//!
//! The serde derives of [`Container`] are behind the `serde` feature.

use std::path::{Path, PathBuf};

use crate::procfs;

/// A container a process runs in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Container {
    /// The runtime (`docker`, `containerd`, `podman`, `kubernetes`, `unknown`).
    pub runtime: String,
    /// The container id, when the cgroup path or mountinfo shows it.
    pub id: Option<String>,
    /// The image, when the environment says it.
    pub image: Option<String>,
}

/// The container process `pid` runs in, read from its `/proc` entries, its root and the few
/// variables of its environment that name a container or image (`None` when it shows none,
/// or they cannot be read).
pub fn of_process(pid: u32) -> Option<Container> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let environ = procfs::environ(pid).unwrap_or_default();
    detect(&proc_dir, &proc_dir.join("root"), &|k| environ.get(k))
}

/// The container this process runs in (`None` when it shows none).
pub fn of_self() -> Option<Container> {
    detect(Path::new("/proc/self"), Path::new("/"), &|k| {
        std::env::var(k).ok()
    })
}

/// The container of the process whose `/proc` entry is `proc_dir` and whose root folder is
/// `root`, with `env` its environment.
fn detect(proc_dir: &Path, root: &Path, env: &dyn Fn(&str) -> Option<String>) -> Option<Container> {
    let read = |p: PathBuf| std::fs::read_to_string(p).ok().unwrap_or_default();
    let cgroup = read(proc_dir.join("cgroup"));
    let (cgroup_runtime, cgroup_id) = parse_cgroup(&cgroup);
    let id = cgroup_id.or_else(|| id_from_mountinfo(&read(proc_dir.join("mountinfo"))));
    let containerenv = std::fs::read_to_string(root.join("run/.containerenv")).ok();
    let podman = containerenv.as_deref().map(parse_containerenv);
    let runtime = if env("KUBERNETES_SERVICE_HOST").is_some() || cgroup.contains("kubepods") {
        Some("kubernetes")
    } else if podman.is_some() {
        Some("podman")
    } else if root.join(".dockerenv").exists() {
        Some("docker")
    } else {
        cgroup_runtime
    };
    let runtime = match (runtime, &id) {
        (Some(r), _) => r,
        (None, Some(_)) => "unknown",
        (None, None) => return None,
    };
    let (podman_id, podman_image) = podman.unwrap_or_default();
    let image = ["CONTAINER_IMAGE", "IMAGE_NAME", "DOCKER_IMAGE"]
        .iter()
        .find_map(|k| env(k).filter(|v| !v.is_empty()))
        .or(podman_image);
    Some(Container {
        runtime: runtime.to_string(),
        id: id.or(podman_id),
        image,
    })
}

/// The container runtime and id a `/proc/PID/cgroup` shows: a 64-hex-digit path part
/// (`/docker/ID`, `docker-ID.scope`, `cri-containerd-ID.scope`, `crio-ID.scope`,
/// `libpod-ID.scope`, `/kubepods/.../ID`).
fn parse_cgroup(text: &str) -> (Option<&'static str>, Option<String>) {
    for (_, _, path) in procfs::parse_cgroup_lines(text) {
        for part in path.split('/').rev() {
            let Some(id) = hex64_in(part) else { continue };
            let runtime = if part.starts_with("cri-containerd") || path.contains("containerd") {
                "containerd"
            } else if part.starts_with("crio") {
                "cri-o"
            } else if part.starts_with("libpod") {
                "podman"
            } else if path.contains("kubepods") {
                "kubernetes"
            } else if path.contains("docker") {
                "docker"
            } else {
                "unknown"
            };
            return (Some(runtime), Some(id));
        }
    }
    (None, None)
}

/// The container id in `/proc/PID/mountinfo`: docker and podman bind-mount the container's
/// own `hostname`/`hosts`/`resolv.conf` from a folder named after it.
fn id_from_mountinfo(text: &str) -> Option<String> {
    text.lines()
        .filter(|l| {
            l.contains(" /etc/hostname ")
                || l.contains(" /etc/hosts ")
                || l.contains(" /etc/resolv.conf ")
        })
        .find_map(|l| {
            // The mount's root (field 4) is the folder on the host.
            let root = l.split_whitespace().nth(3)?;
            root.split('/').find_map(hex64_in)
        })
}

/// Podman's `/run/.containerenv`: the container's id and image, when it states them.
fn parse_containerenv(text: &str) -> (Option<String>, Option<String>) {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let v = l.trim().strip_prefix(key)?.strip_prefix('=')?;
            Some(v.trim().trim_matches('"').to_string()).filter(|v| !v.is_empty())
        })
    };
    (get("id"), get("image"))
}

/// The 64 lower-case hex digits in a path part (`docker-ID.scope`, `ID`), if it holds them.
fn hex64_in(part: &str) -> Option<String> {
    let b = part.as_bytes();
    let is_hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    let mut run = 0usize;
    for (i, c) in b.iter().enumerate() {
        run = if is_hex(c) { run + 1 } else { 0 };
        let ends = b.get(i + 1).is_none_or(|n| !is_hex(n));
        if run == 64 && ends {
            return part.get(i + 1 - 64..=i).map(str::to_string);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4f1b3c2d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809";

    #[test]
    fn container_ids_from_cgroup_and_mountinfo() {
        let docker = format!("0::/system.slice/docker-{ID}.scope\n");
        assert_eq!(parse_cgroup(&docker), (Some("docker"), Some(ID.into())));
        let v1 = format!("12:memory:/docker/{ID}\n");
        assert_eq!(parse_cgroup(&v1), (Some("docker"), Some(ID.into())));
        let k8s = format!("0::/kubepods/burstable/pod1234/cri-containerd-{ID}.scope\n");
        assert_eq!(parse_cgroup(&k8s).0, Some("containerd"));
        let crio = format!("0::/kubepods.slice/crio-{ID}.scope\n");
        assert_eq!(parse_cgroup(&crio), (Some("cri-o"), Some(ID.into())));
        // A host's cgroups, and a hex run of another length, are not containers.
        assert_eq!(
            parse_cgroup("0::/user.slice/user-1000.slice\n"),
            (None, None)
        );
        let short = "4:memory:/process_api/845e5a5a368659de317cf53be3f31da3\n";
        assert_eq!(parse_cgroup(short), (None, None));
        assert_eq!(hex64_in(&format!("{ID}0")), None);
        let mounts = format!(
            "612 590 254:1 /var/lib/docker/containers/{ID}/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw\n"
        );
        assert_eq!(id_from_mountinfo(&mounts).as_deref(), Some(ID));
        assert_eq!(
            id_from_mountinfo("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"),
            None
        );
        let env = "engine=\"podman-4.9\"\nname=\"web\"\nid=\"abc\"\nimage=\"quay.io/x/app:1\"\n";
        assert_eq!(
            parse_containerenv(env),
            (Some("abc".into()), Some("quay.io/x/app:1".into()))
        );
    }

    /// A process's container from its `/proc` files, its root and its environment.
    #[test]
    fn containers_from_proc_files_root_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        let (proc_dir, root) = (dir.path().join("proc"), dir.path().join("root"));
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::create_dir_all(root.join("run")).unwrap();
        let none = |_: &str| None;
        std::fs::write(proc_dir.join("cgroup"), "0::/\n").unwrap();
        assert!(detect(&proc_dir, &root, &none).is_none());
        // Docker on cgroup v2 with a private namespace: the id from mountinfo only.
        std::fs::write(root.join(".dockerenv"), "").unwrap();
        let mounts = format!(
            "1 0 8:1 /var/lib/docker/containers/{ID}/hosts /etc/hosts rw - ext4 /dev/sda1 rw\n"
        );
        std::fs::write(proc_dir.join("mountinfo"), mounts).unwrap();
        let image = |k: &str| (k == "CONTAINER_IMAGE").then(|| "shop/api:2.4.1".to_string());
        let c = detect(&proc_dir, &root, &image).unwrap();
        assert_eq!(
            (c.runtime.as_str(), c.id.as_deref(), c.image.as_deref()),
            ("docker", Some(ID), Some("shop/api:2.4.1"))
        );
        // Kubernetes says so in the environment, whatever the runtime below.
        let k8s = |k: &str| (k == "KUBERNETES_SERVICE_HOST").then(|| "10.0.0.1".to_string());
        assert_eq!(
            detect(&proc_dir, &root, &k8s).unwrap().runtime,
            "kubernetes"
        );
        // Podman's file names the container and its image.
        std::fs::remove_file(root.join(".dockerenv")).unwrap();
        std::fs::remove_file(proc_dir.join("mountinfo")).unwrap();
        std::fs::write(
            root.join("run/.containerenv"),
            "id=\"p1\"\nimage=\"quay.io/a:1\"\n",
        )
        .unwrap();
        let c = detect(&proc_dir, &root, &none).unwrap();
        assert_eq!(
            (c.runtime.as_str(), c.id.as_deref(), c.image.as_deref()),
            ("podman", Some("p1"), Some("quay.io/a:1"))
        );
    }
}
