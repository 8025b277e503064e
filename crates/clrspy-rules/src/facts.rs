//! What is known of a process for matching — names, command line, user, namespaces, cgroups —
//! read from `/proc` (and the runtime's ProcessInfo for the entry assembly), and the match of
//! a rule's conditions against it, with the reasons in words for the decisions log.

use diagnostics_client::procfs;

use crate::model::{ContainerMatch, Match};
use crate::values::UserSpec;

/// A process as rules see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessFacts {
    /// The process id as seen from here.
    pub pid: u32,
    /// The kernel's name for it (`/proc/PID/comm`).
    pub comm: String,
    /// Its executable's file name.
    pub exe: Option<String>,
    /// The entry assembly as the runtime reports it, else as the command line says
    /// (`app` for `dotnet app.dll`).
    pub entry_assembly: Option<String>,
    /// The command line, arguments joined by spaces.
    pub command_line: String,
    /// Real uid.
    pub uid: Option<u32>,
    /// The uid's name in this machine's `/etc/passwd`.
    pub user: Option<String>,
    /// PID namespace inode.
    pub pid_namespace: Option<u64>,
    /// True when the process is in another PID namespace than clrspy.
    pub in_container: bool,
    /// Its cgroup paths (one per hierarchy).
    pub cgroups: Vec<String>,
}

impl ProcessFacts {
    /// Reads what `/proc` says about `pid`; `entry_assembly` is the runtime's answer, when it
    /// gave one.
    pub fn read(pid: u32, entry_assembly: Option<String>) -> ProcessFacts {
        let comm = procfs::comm(pid).unwrap_or_default();
        let args: Vec<String> = procfs::cmdline(pid).unwrap_or_default();
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        let entry_assembly = entry_assembly
            .filter(|e| !e.trim().is_empty())
            .or_else(|| entry_from_args(&args));
        let uid = procfs::uid(pid);
        let user = uid.and_then(|u| {
            std::fs::read_to_string("/etc/passwd")
                .ok()
                .and_then(|p| user_name(&p, u))
        });
        let inode = |l: Option<std::path::PathBuf>| ns_inode(&l?.to_string_lossy());
        let pid_namespace = inode(procfs::namespace(pid, "pid"));
        let ours = inode(procfs::own_namespace("pid"));
        let cgroups = procfs::group_paths(pid).unwrap_or_default();
        ProcessFacts {
            pid,
            comm,
            exe,
            entry_assembly,
            command_line: args.join(" "),
            uid,
            user,
            in_container: pid_namespace.is_some() && ours.is_some() && pid_namespace != ours,
            pid_namespace,
            cgroups,
        }
    }

    /// The name its files are named after: the entry assembly, else the kernel's name; only
    /// letters, digits, `.`, `_`, `-`.
    pub fn file_name(&self) -> String {
        let raw = self
            .entry_assembly
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or(&self.comm);
        let clean: String = raw
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            .collect();
        if clean.is_empty() {
            "process".into()
        } else {
            clean
        }
    }

    /// Why `m` matches this process (one phrase per condition), or None when it does not.
    pub fn matches(
        &self,
        m: &Match,
        passwd_uid: &dyn Fn(&str) -> Option<u32>,
    ) -> Option<Vec<String>> {
        let mut why = Vec::new();
        if let Some(g) = &m.name {
            let names = [
                self.entry_assembly.as_deref(),
                self.exe.as_deref(),
                Some(self.comm.as_str()),
            ];
            let hit = names.into_iter().flatten().find(|n| g.is_match(n))?;
            why.push(format!("name \"{}\" matches {hit}", g.as_str()));
        }
        if let Some(p) = &m.command_line {
            if !p.is_match(&self.command_line) {
                return None;
            }
            why.push(format!("command line matches /{}/", p.as_str()));
        }
        if let Some(g) = &m.entry_assembly {
            let e = self.entry_assembly.as_deref().filter(|e| g.is_match(e))?;
            why.push(format!("entry assembly \"{}\" matches {e}", g.as_str()));
        }
        if let Some(u) = &m.user {
            let uid = self.uid?;
            let ok = match u {
                UserSpec::Uid(want) => *want == uid,
                UserSpec::Name(n) => {
                    self.user.as_deref() == Some(n.as_str()) || passwd_uid(n) == Some(uid)
                }
            };
            if !ok {
                return None;
            }
            why.push(format!("user {uid}"));
        }
        if let Some(c) = &m.container {
            why.push(self.container_matches(c)?);
        }
        Some(why)
    }

    fn container_matches(&self, c: &ContainerMatch) -> Option<String> {
        let mut why = Vec::new();
        if let Some(inside) = c.inside {
            if inside != self.in_container {
                return None;
            }
            why.push(match (inside, self.pid_namespace) {
                (true, Some(ns)) => format!("in a container (pid namespace {ns})"),
                (true, None) => "in a container".to_string(),
                (false, _) => "on the host".to_string(),
            });
        }
        if let Some(ns) = c.pid_namespace {
            if self.pid_namespace != Some(ns) {
                return None;
            }
            why.push(format!("pid namespace {ns}"));
        }
        if let Some(g) = &c.cgroup {
            let hit = self.cgroups.iter().find(|p| g.is_match(p))?;
            why.push(format!("cgroup {hit}"));
        }
        Some(why.join(", "))
    }
}

/// The uid of user `name` in `/etc/passwd` text.
pub fn uid_of(passwd: &str, name: &str) -> Option<u32> {
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == name).then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

/// The name of `uid` in `/etc/passwd` text.
fn user_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse::<u32>().ok()? == uid).then(|| f[0].to_string())
    })
}

/// The inode of a namespace link (`pid:[4026531836]`).
fn ns_inode(link: &str) -> Option<u64> {
    link.split_once('[')?.1.strip_suffix(']')?.parse().ok()
}

/// The entry assembly a command line names: `app` for `dotnet [options] app.dll`, else the
/// program's own name.
fn entry_from_args(args: &[String]) -> Option<String> {
    let stem = |a: &str| {
        std::path::Path::new(a)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
    };
    let program = stem(args.first()?)?;
    if program == "dotnet" {
        // `dotnet exec --runtimeconfig x app.dll` or `dotnet app.dll`: the first .dll.
        return args[1..]
            .iter()
            .find(|a| a.ends_with(".dll"))
            .and_then(|a| stem(a));
    }
    Some(program)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{RuleSet, Syntax};

    fn rules(text: &str) -> RuleSet {
        RuleSet::parse(text, Syntax::Json).unwrap()
    }

    fn csc() -> ProcessFacts {
        ProcessFacts {
            pid: 10,
            comm: "dotnet".into(),
            exe: Some("dotnet".into()),
            entry_assembly: entry_from_args(&[
                "/usr/share/dotnet/dotnet".into(),
                "exec".into(),
                "/sdk/Roslyn/bincore/csc.dll".into(),
                "--shared".into(),
            ]),
            command_line: "/usr/share/dotnet/dotnet exec /sdk/Roslyn/bincore/csc.dll --shared"
                .into(),
            uid: Some(1000),
            user: Some("dev".into()),
            pid_namespace: Some(4026531836),
            in_container: false,
            cgroups: vec!["/user.slice/user-1000.slice/session-1.scope".into()],
        }
    }

    fn no_passwd(_: &str) -> Option<u32> {
        None
    }

    #[test]
    fn names_command_lines_users_and_containers() {
        let f = csc();
        assert_eq!(f.entry_assembly.as_deref(), Some("csc"));
        assert_eq!(f.file_name(), "csc");
        let set = rules(crate::parse::tests_example());
        let why = f.matches(&set.rules[0].matcher, &no_passwd).unwrap();
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(f.matches(&set.rules[1].matcher, &no_passwd).is_none());
        let mut g = f.clone();
        g.command_line = "dotnet csc.dll".into();
        assert!(g.matches(&set.rules[0].matcher, &no_passwd).is_none());

        let set = rules(
            r#"{"rules":[
            {"name":"u","match":{"user":"dev"},"dump":{}},
            {"name":"n","match":{"user":1000},"dump":{}},
            {"name":"x","match":{"user":"other"},"dump":{}},
            {"name":"c","match":{"container":{"inside":true}},"dump":{}},
            {"name":"h","match":{"container":{"inside":false,"cgroup":"/user.slice/*"}},"dump":{}},
            {"name":"p","match":{"container":{"pid_namespace":4026531836}},"dump":{}},
            {"name":"e","match":{"entry_assembly":"CSC"},"dump":{}}]}"#,
        );
        let hits: Vec<&str> = set
            .rules
            .iter()
            .filter(|r| f.matches(&r.matcher, &no_passwd).is_some())
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(hits, ["u", "n", "h", "p", "e"]);
        let by_passwd = |n: &str| (n == "other").then_some(1000);
        assert!(f.matches(&set.rules[2].matcher, &by_passwd).is_some());
    }

    #[test]
    fn proc_text() {
        assert_eq!(ns_inode("pid:[4026531836]"), Some(4026531836));
        assert_eq!(ns_inode("pid:"), None);
        let passwd = "root:x:0:0:root:/root:/bin/bash\ndev:x:1000:1000::/home/dev:/bin/sh\n";
        assert_eq!(uid_of(passwd, "dev"), Some(1000));
        assert_eq!(user_name(passwd, 0).as_deref(), Some("root"));
        assert_eq!(uid_of(passwd, "nobody"), None);
        assert_eq!(
            entry_from_args(&["/app/Web".into()]).as_deref(),
            Some("Web")
        );
        assert_eq!(entry_from_args(&[]), None);
    }

    #[test]
    fn this_process_reads() {
        let f = ProcessFacts::read(std::process::id(), None);
        assert!(!f.comm.is_empty());
        assert!(!f.in_container);
        assert!(f.uid.is_some());
    }
}
