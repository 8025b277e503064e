//! `compiled-per-call`: expression trees, regular expressions or dynamic methods compiled
//! over and over (per request, per loop turn) instead of once. Each compile runs the
//! expression or regex compiler and then the JIT on a new method: milliseconds of CPU for
//! what, kept, costs nothing the next time.
//!
//! Evidence: the CPU under compiling frames (`Expression.Compile`, `LambdaCompiler`,
//! `DynamicMethod.CreateDelegate`, the `Regex` constructor and its compiler) and in the JIT
//! under the regex and expression code (a compiled regex's methods are jitted when first
//! run), the method that called them, the JIT's share of it, and how many generated methods the runtime compiled
//! while recording (`dynamicClass.lambda_method…`, `Regex…`), per second and per request.
//!
//! Thresholds: a warning at 5% of the process's CPU and 100 ms (below that, a few compiles
//! are what an app's start costs), and, when the trace names the generated methods, compiles
//! in at least half of the seconds from the first to the last (a burst at the start is the
//! app warming up: a framework compiles its invokers once); critical at 25% of the CPU (the
//! compiles are the app's main work). Info from 1% (and 20 ms), or 100 compiles at 5 a
//! second sustained with less CPU; a burst alone (compiles in under half of the trace's
//! seconds) is no finding at all: MVC, minimal APIs and EF Core compile their invokers and
//! queries on each route's first calls.

use clrspy_analysis::profile::Metric;

use super::super::finding::{count, ms, per_request, rate, top_sites, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "compiled-per-call",
    title: "Expression trees or regular expressions compiled on every call",
    fix: "Compile once and reuse: keep the compiled delegate or the Regex in a static field (or a cache keyed by what varies), or use [GeneratedRegex]; never build and compile them per request.",
    link: "https://learn.microsoft.com/dotnet/standard/base-types/best-practices-regex#take-charge-of-the-regex-object-instantiation",
    check,
};

const WARN_SHARE: f64 = 5.0;
const WARN_MS: f64 = 100.0;
const CRITICAL_SHARE: f64 = 25.0;
const INFO_SHARE: f64 = 1.0;
const INFO_MS: f64 = 20.0;
const SUSTAINED: f64 = 0.5;
const INFO_RATE: f64 = 5.0;
const INFO_COMPILED: u64 = 100;

/// What a frame compiles, when it is a compiling frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compiles {
    Expression,
    Regex,
    DynamicMethod,
}

fn compiles(name: &str) -> Option<Compiles> {
    if name.starts_with("System.Linq.Expressions.")
        && (name.contains(".Compile") || name.contains("LambdaCompiler"))
    {
        return Some(Compiles::Expression);
    }
    if name.starts_with("System.Text.RegularExpressions.Regex..ctor")
        || name.starts_with("System.Text.RegularExpressions.RegexCompiler")
        || name.starts_with("System.Text.RegularExpressions.RegexParser.Parse")
    {
        return Some(Compiles::Regex);
    }
    name.starts_with("System.Reflection.Emit.DynamicMethod.CreateDelegate")
        .then_some(Compiles::DynamicMethod)
}

/// Namespaces of the compilers themselves (their frames are not the caller).
const COMPILERS: &[&str] = &[
    "System.Linq.Expressions.",
    "System.Text.RegularExpressions.",
    "System.Reflection.Emit.",
    "System.Dynamic.Utils.",
];

fn is_jit(name: &str) -> bool {
    name.starts_with("[JIT compiler") || name.contains("libclrjit")
}

/// What the compilers' frames compile, by namespace: the frames of a stack in them that
/// run the JIT count as compiling, though none is a compiling frame (a compiled `Regex`'s
/// methods are compiled by the JIT when it first runs them, under `Regex.IsMatch`).
fn compiler_kind(name: &str) -> Option<Compiles> {
    if name.starts_with("System.Text.RegularExpressions.") {
        Some(Compiles::Regex)
    } else if name.starts_with("System.Linq.Expressions.") || name.starts_with("System.Dynamic.Utils.") {
        Some(Compiles::Expression)
    } else {
        name.starts_with("System.Reflection.Emit.")
            .then_some(Compiles::DynamicMethod)
    }
}

/// The CPU compiling: (total, the JIT's part, by calling method, by kind), in the profile's
/// units. A stack compiles when it has a compiling frame, or runs the JIT under a frame of
/// the compilers' namespaces; its caller is the first frame past the outermost frame of those
/// namespaces.
fn compile_cpu(input: &Input<'_>) -> (f64, f64, Vec<(String, f64)>, [f64; 3]) {
    let symbols = &input.a.symbols;
    let mut total = 0.0;
    let mut jit = 0.0;
    let mut kinds = [0.0; 3];
    let mut callers: rustc_hash::FxHashMap<String, f64> = Default::default();
    for r in &input.profile().rows {
        let w = r.weight(Metric::Cpu);
        if w <= 0.0 {
            continue;
        }
        let name = |i: usize| symbols.frame(r.frames[i]).name.as_str();
        // The outermost frame of the compilers' namespaces (leaf first: the last one).
        let Some((at, kind)) = (0..r.frames.len())
            .rev()
            .find_map(|i| compiler_kind(name(i)).map(|k| (i, k)))
        else {
            continue;
        };
        let in_jit = (0..at).any(|i| is_jit(name(i)));
        // The outermost compiling frame says what is compiled (`Expression.Compile` calls
        // `DynamicMethod.CreateDelegate`).
        let compiling = (0..=at).rev().find_map(|i| compiles(name(i)));
        let kind = match (compiling, in_jit) {
            (Some(k), _) => k,
            (None, true) => kind,
            (None, false) => continue,
        };
        total += w;
        kinds[kind as usize] += w;
        if in_jit {
            jit += w;
        }
        let caller = (at + 1..r.frames.len())
            .map(name)
            .find(|n| !n.starts_with('[') && !COMPILERS.iter().any(|p| n.starts_with(p)))
            .unwrap_or("[no managed caller]");
        *callers.entry(caller.to_string()).or_default() += w;
    }
    (total, jit, callers.into_iter().collect(), kinds)
}

/// The severity of `share` percent of the CPU (`cpu_ms`) compiling, with `compiled`
/// generated methods at `per_s` a second, compiled in `seconds_with_some` of the seconds.
fn grade(
    share: f64,
    cpu_ms: f64,
    sustained: bool,
    compiled: u64,
    per_s: f64,
    seconds_with_some: f64,
) -> Option<Severity> {
    if share >= CRITICAL_SHARE && cpu_ms >= WARN_MS && sustained {
        Some(Severity::Critical)
    } else if share >= WARN_SHARE && cpu_ms >= WARN_MS && sustained {
        Some(Severity::Warning)
    } else if sustained
        && ((share >= INFO_SHARE && cpu_ms >= INFO_MS)
            || (compiled >= INFO_COMPILED && per_s >= INFO_RATE && seconds_with_some >= SUSTAINED))
    {
        Some(Severity::Info)
    } else {
        None
    }
}

/// What the JIT's share says when no stack shows the JIT.
const JIT_NOT_SEEN: &str =
    "not seen in the samples (the runtime's sampler does not sample the JIT; the kernel's does)";

/// What is compiled, in words: the kind with the most CPU (`kinds` by [`Compiles`]).
fn what_of(cpu: f64, kinds: &[f64; 3]) -> &'static str {
    if cpu <= 0.0 {
        return "generated methods";
    }
    let most = kinds
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i);
    match most {
        Some(1) => "regular expressions",
        Some(2) => "dynamic methods",
        _ => "expression trees",
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let all = input.profile().total(Metric::Cpu);
    let (cpu, jit, callers, kinds) = compile_cpu(input);
    let g = input.a.symbols.generated();
    let seconds = input.seconds();
    let compiled_rate = if seconds > 0.0 {
        g.total() as f64 / seconds
    } else {
        0.0
    };
    let spread = g.seconds_with_some(seconds);
    let sustained = g.total() == 0 || spread >= SUSTAINED;
    let share = if all > 0.0 { cpu * 100.0 / all } else { 0.0 };
    let cpu_ms = cpu * input.ms_per_unit();
    let severity = grade(share, cpu_ms, sustained, g.total(), compiled_rate, spread)?;
    let what = what_of(cpu, &kinds);
    let sites = top_sites(callers, cpu, 5, |w| ms(w * input.ms_per_unit()));
    let from = sites
        .first()
        .map(|s| format!(", {}% of it from {}", s.percent, s.name))
        .unwrap_or_default();
    let generated = if g.total() > 0 {
        format!(
            "; the runtime compiled {} generated methods while recording ({}{})",
            count(g.total()),
            rate(compiled_rate),
            per_request(g.total() as f64, input.served())
        )
    } else {
        String::new()
    };
    let said = format!(
        "{share:.1}% of the CPU ({}) compiles {what}{from}{generated}",
        ms(cpu_ms)
    );
    let mut found = Found::new(severity, said)
        .fact("CPU compiling", format!("{} ({share:.1}% of the process's)", ms(cpu_ms)))
        .fact(
            "of it in the JIT",
            if jit > 0.0 {
                format!("{:.0}%", jit * 100.0 / cpu.max(f64::MIN_POSITIVE))
            } else {
                JIT_NOT_SEEN.to_string()
            },
        )
        .fact("expression trees compiled", count(g.lambdas))
        .fact("regular expressions compiled", count(g.regexes))
        .fact("other dynamic methods compiled", count(g.other));
    if let Some(r) = input.served() {
        found = found.fact("requests served", count(r));
    }
    Some(found.sites(sites))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        // The regex route: most of the CPU, compiled all along.
        assert_eq!(grade(62.3, 7100.0, true, 17_782, 2168.0, 1.0), Some(Severity::Critical));
        assert_eq!(grade(12.0, 800.0, true, 4000, 500.0, 0.9), Some(Severity::Warning));
        // The same share in a burst at the start (a framework warming up) is nothing.
        assert_eq!(grade(12.0, 800.0, false, 400, 50.0, 0.1), None);
        // Too little CPU to matter, too few compiles to be per call.
        assert_eq!(grade(6.0, 40.0, true, 12, 6.0, 1.0), Some(Severity::Info));
        assert_eq!(grade(0.0, 0.0, true, 12, 6.0, 1.0), None);
        assert_eq!(grade(0.5, 10.0, true, 0, 0.0, 0.0), None);
    }

    #[test]
    fn compiling_frames_are_told_by_name() {
        assert_eq!(
            compiles("System.Linq.Expressions.Expression`1[System.__Canon].Compile"),
            Some(Compiles::Expression)
        );
        assert_eq!(
            compiles("System.Linq.Expressions.Compiler.LambdaCompiler.CompileLambda"),
            Some(Compiles::Expression)
        );
        assert_eq!(
            compiles("System.Text.RegularExpressions.Regex..ctor(String,RegexOptions)"),
            Some(Compiles::Regex)
        );
        assert_eq!(
            compiles("System.Reflection.Emit.DynamicMethod.CreateDelegate"),
            Some(Compiles::DynamicMethod)
        );
        // Running a compiled expression or a regex is not compiling one.
        assert_eq!(compiles("System.Text.RegularExpressions.Regex.IsMatch"), None);
        assert_eq!(compiles("System.Linq.Expressions.Expression.Lambda"), None);
        assert_eq!(compiles("dynamicClass.lambda_method12"), None);
    }

    #[test]
    fn the_compilers_namespaces() {
        assert_eq!(compiler_kind("System.Text.RegularExpressions.Regex.ScanInternal"), Some(Compiles::Regex));
        assert_eq!(compiler_kind("System.Linq.Expressions.Expression.Lambda"), Some(Compiles::Expression));
        assert_eq!(compiler_kind("System.Linq.Enumerable.Select"), None);
    }

    #[test]
    fn the_jit_is_told_by_its_group_or_module() {
        assert!(is_jit("[JIT compiler: libclrjit.so]"));
        assert!(is_jit("libclrjit.so!+0x1234"));
        assert!(!is_jit("[runtime: libcoreclr.so]"));
    }
}
