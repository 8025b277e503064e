//! The live tests: the real .NET runtime (the C# programs of testapps/, built once per run) under
//! clrspy, checked against /proc, the kernel and the real consumers `.ci/setup` installs. One
//! test binary, one module per file of this folder (the file names are the module names):
//! `cargo test -p clrspy --test live -- live_watch::` runs one file's tests, two at a time
//! like every test binary. A test that measures amounts of CPU runs alone in it
//! (`common::machine`). See ../README.md.

#[path = "../common/mod.rs"]
mod common;

mod live_agent;
mod live_agent_dumps;
mod live_agent_load;
mod live_agent_metrics;
mod live_agent_pprof;
mod live_agent_rules;
mod live_agent_streams;
mod live_analysis;
mod live_bundle;
mod live_children;
mod live_container;
mod live_counters;
mod live_counters_rules;
mod live_counters_web;
mod live_diff;
mod live_doctor;
mod live_dump_analyze;
mod live_dumps;
mod live_env_traces;
mod live_estimate;
mod live_findings;
mod live_gc;
mod live_hangs;
mod live_heap;
mod live_heap_actions;
mod live_http;
mod live_inlining;
mod live_kernel_sampler;
mod live_launch;
mod live_lines;
mod live_loader;
mod live_logs;
mod live_metrics;
mod live_package;
mod live_ps;
mod live_pump;
mod live_r2r;
mod live_razor;
mod live_readme;
mod live_report;
mod live_requests;
mod live_ring;
mod live_runqueue;
mod live_scenarios;
mod live_scrub;
mod live_stack;
mod live_thread_cpu;
mod live_top;
mod live_topn;
mod live_tree;
mod live_triggers;
mod live_vbcs;
mod live_watch;
mod live_watch_bundle;
mod live_watch_crash;
mod live_watch_hold;
mod live_web_cpu;
mod live_whole;
