//! The plans for a fixed environment against `tests/data/doctor/<symptom>.json`, and how
//! they change with the environment.

use super::*;
use crate::doctor::environment::{KernelSampler, TargetAccess};
use diagnostics_client::container::Container;

/// A machine as plans meet it often: a VM, not root, Yama restricted, perf events for own
/// processes, plenty of disk, the process reachable.
fn fixed() -> Environment {
    Environment {
        os: "Linux".into(),
        kernel: "6.8.0-45-generic".into(),
        distro: Some("Ubuntu 24.04.1 LTS".into()),
        arch: "x86_64".into(),
        hostname: "build-7".into(),
        container: None,
        is_root: false,
        ptrace_scope: Some(1),
        perf_event_paranoid: Some(2),
        kernel_sampler: KernelSampler {
            allowed: true,
            note: None,
        },
        output_dir: "/home/dev/diag".into(),
        free_disk_bytes: Some(40 << 30),
        target: Some(TargetAccess {
            pid: 4242,
            name: "Shop.Api".into(),
            runtime_version: Some("10.0.12".into()),
            entry_assembly: Some("/srv/shop/Shop.Api.dll".into()),
            app_version: Some("2.4.1+8c1f9e2".into()),
            same_user: true,
            diagnostics_socket: true,
            can_attach: true,
            rss_bytes: Some(768 << 20),
            threads: Some(40),
            container: None,
        }),
    }
}

fn data(symptom: Symptom) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/doctor")
        .join(format!("{}.json", symptom.name()))
}

/// Each symptom's plan for the fixed environment is the one in its JSON file
/// (`CLRSPY_BLESS=1` rewrites them; read the diff before committing).
#[test]
fn plans_match_their_expected_json() {
    let bless = std::env::var("CLRSPY_BLESS").is_ok_and(|v| v == "1");
    for s in Symptom::ALL {
        let got = serde_json::to_value(plan(s, &fixed(), Some(4242))).unwrap();
        let path = data(s);
        if bless {
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(got, want, "{}: plan differs from {}", s, path.display());
    }
}

/// The JSON keys the issue names, and commands that are clrspy's own, with the process.
#[test]
fn every_plan_has_the_keys_and_real_commands() {
    let known = [
        "bundle", "report", "top", "counters", "heap", "stack", "dump", "record", "rules", "watch",
        "ps", "doctor", "logs",
    ];
    for s in Symptom::ALL {
        let p = plan(s, &fixed(), Some(4242));
        let v = serde_json::to_value(&p).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["symptom", "environment", "steps", "tradeoffs"]);
        assert_eq!(v["symptom"], s.name());
        for step in v["steps"].as_array().unwrap() {
            let keys: Vec<&str> = step
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(keys, ["what", "why", "command", "cost"]);
        }
        assert!(!p.steps.is_empty() && !p.tradeoffs.is_empty(), "{s}");
        for step in &p.steps {
            for part in step.command.split("&&") {
                let words: Vec<&str> = part.split_whitespace().collect();
                if words.first() == Some(&"sleep") {
                    continue;
                }
                assert_eq!(words.first(), Some(&"clrspy"), "{s}: {}", step.command);
                assert!(known.contains(&words[1]), "{s}: {}", step.command);
            }
            assert!(!step.command.contains("PID"), "{s}: {}", step.command);
        }
        // The bundle for this symptom, where a bundle is the way.
        let bundle = format!("--symptom {}", s.name());
        assert!(
            p.steps.iter().any(|x| x.command.contains(&bundle)) || s == Symptom::Crash,
            "{s}"
        );
    }
}

#[test]
fn without_a_process_the_commands_say_pid() {
    let mut env = fixed();
    env.target = None;
    let p = plan(Symptom::HighCpu, &env, None);
    assert!(p.steps[1].command.starts_with(
        "clrspy bundle -p PID --symptom high-cpu --duration 30s -o clrspy-high-cpu.zip"
    ));
    // A crash without a process: start the program under clrspy.
    let p = plan(Symptom::Crash, &env, None);
    assert!(
        p.steps[0].command.contains("--dump-on-crash")
            && p.steps[0].command.ends_with("-- COMMAND")
    );
    assert!(!p.steps.iter().any(|s| s.command.contains("bundle")));
}

#[test]
fn the_memory_leak_plan_watches_counters_then_diffs_snapshots() {
    let p = plan(Symptom::MemoryLeak, &fixed(), Some(4242));
    assert!(p.steps[0]
        .command
        .starts_with("clrspy counters monitor -p 4242"));
    assert!(p.steps[1].command.contains("--symptom memory-leak"));
    assert!(p.steps[1].cost.contains("full blocking GC"));
    assert!(
        p.steps[1].cost.contains("768.0 MB") || p.steps[1].cost.contains("768"),
        "{}",
        p.steps[1].cost
    );
    assert!(p
        .steps
        .iter()
        .any(|s| s.command.starts_with("clrspy heap diff")));
}

#[test]
fn a_dump_is_sized_by_the_process_and_warned_on_low_disk() {
    let mut env = fixed();
    let dump = |env: &Environment| {
        plan(Symptom::Hang, env, Some(4242))
            .steps
            .into_iter()
            .find(|s| s.command.starts_with("clrspy dump"))
            .unwrap()
    };
    assert!(!dump(&env).cost.contains("free space first"));
    env.free_disk_bytes = Some(300 << 20);
    let d = dump(&env);
    assert!(d.cost.contains("less than the raw dump"), "{}", d.cost);
    let p = plan(Symptom::Hang, &env, Some(4242));
    assert!(p
        .tradeoffs
        .iter()
        .any(|t| t.contains("free in /home/dev/diag")));
}

#[test]
fn privileges_and_ptrace_change_the_plan() {
    let mut env = fixed();
    env.ptrace_scope = Some(3);
    let p = plan(Symptom::Hang, &env, Some(4242));
    assert!(
        p.tradeoffs.iter().any(|t| t.contains("ptrace_scope=3")),
        "{:?}",
        p.tradeoffs
    );
    // Another user's process: reach it first.
    let mut env = fixed();
    if let Some(t) = env.target.as_mut() {
        t.same_user = false;
        t.can_attach = false;
    }
    let p = plan(Symptom::HighCpu, &env, Some(4242));
    assert_eq!(p.steps[0].what, "Reach the process first");
    assert!(p.steps[0].command.starts_with("sudo clrspy doctor -p 4242"));
    assert!(p.tradeoffs.iter().any(|t| t.contains("another user")));
    // No socket: not a .NET process (or hidden).
    let mut env = fixed();
    if let Some(t) = env.target.as_mut() {
        t.diagnostics_socket = false;
        t.can_attach = false;
    }
    let p = plan(Symptom::HighCpu, &env, Some(4242));
    assert_eq!(p.steps[0].command, "clrspy ps");
}

#[test]
fn the_sampling_cost_scales_with_the_threads() {
    let mut env = fixed();
    let cost = |env: &Environment| plan(Symptom::Hang, env, Some(4242)).steps[2].cost.clone();
    assert!(cost(&env).contains("(40 threads now)"), "{}", cost(&env));
    if let Some(t) = env.target.as_mut() {
        t.threads = Some(322);
    }
    // Hundreds of threads: the bundle takes the kernel's samples where allowed...
    assert!(
        cost(&env).contains("322 threads: the bundle samples with the kernel's sampler"),
        "{}",
        cost(&env)
    );
    // ...and says what the runtime's costs where it is not.
    env.kernel_sampler = KernelSampler {
        allowed: false,
        note: Some("perf_event_paranoid is 3".into()),
    };
    assert!(
        cost(&env).contains("suspends all 322 threads"),
        "{}",
        cost(&env)
    );
}

#[test]
fn refused_perf_events_name_the_runtime_sampler() {
    let mut env = fixed();
    env.kernel_sampler = KernelSampler {
        allowed: false,
        note: Some("perf_event_paranoid is 3".into()),
    };
    let p = plan(Symptom::HighCpu, &env, Some(4242));
    assert!(p.steps[1].cost.contains("runtime's sampler suspends"));
    assert!(p
        .tradeoffs
        .iter()
        .any(|t| t.contains("perf_event_paranoid is 3")));
    // A leak plan samples no CPU: no word about it.
    let p = plan(Symptom::MemoryLeak, &env, Some(4242));
    assert!(!p.tradeoffs.iter().any(|t| t.contains("sampler")));
}

#[test]
fn in_a_container_the_files_are_copied_out() {
    let mut env = fixed();
    env.container = Some(Container {
        runtime: "docker".into(),
        id: Some("4f1b3c2d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809".into()),
        image: None,
    });
    let p = plan(Symptom::HighCpu, &env, Some(4242));
    let last = p.steps.last().unwrap();
    assert_eq!(
        last.command,
        "docker cp 4f1b3c2d5e6f:/home/dev/diag/clrspy-high-cpu-4242.zip ./clrspy-high-cpu-4242.zip"
    );
    env.container = Some(Container {
        runtime: "kubernetes".into(),
        id: None,
        image: None,
    });
    let p = plan(Symptom::Hang, &env, Some(4242));
    assert!(p
        .steps
        .last()
        .unwrap()
        .command
        .starts_with("kubectl cp build-7:/home/dev/diag/"));
    assert!(p.tradeoffs.iter().any(|t| t.contains("SYS_PTRACE")));
}

#[test]
fn windows_and_outputs_show_in_the_commands() {
    let p = plan_for(
        Symptom::HttpErrors,
        &fixed(),
        Some(4242),
        Duration::from_secs(120),
        Path::new("/tmp/x.zip"),
    );
    assert_eq!(
        p.steps[0].command,
        "clrspy bundle -p 4242 --symptom http-errors --duration 2m -o /tmp/x.zip"
    );
    assert_eq!(p.steps[1].command, "clrspy report /tmp/x.zip http");
    assert_eq!(duration_text(Duration::from_millis(1500)), "1500ms");
    assert_eq!(duration_text(Duration::from_secs(45)), "45s");
}

#[test]
fn the_sampler_tradeoff_follows_what_record_would_use() {
    let mut env = fixed();
    env.kernel_sampler = KernelSampler {
        allowed: true,
        note: None,
    };
    let p = plan(Symptom::HighCpu, &env, Some(4242));
    assert!(p
        .tradeoffs
        .iter()
        .any(|t| t.contains("uses it by default (`--sampler auto`)")));
    env.kernel_sampler.note = Some("user mode only".into());
    let p = plan(Symptom::HighCpu, &env, Some(4242));
    assert!(p
        .tradeoffs
        .iter()
        .any(|t| t.contains("keeps the runtime's sampler by default")
            && t.contains("user mode only")));
}
