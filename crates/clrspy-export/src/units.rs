//! Units and rounding shared by every view: byte counts for people, rounding that never
//! prints `-0.0`, and names shortened to fit a column.

/// A byte count for people: `512 B`, `12.3 KB`, `4.5 MB`, `1.25 GB` (binary multiples); the
/// one writer of byte counts, shared with the recorder and the watcher.
pub(crate) use clrspy_values::human_bytes;

/// A count with thousands separators: `1,234,567`.
pub(crate) fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Rounds to `decimals` places; the sign of a zero is dropped (an empty sum is `-0.0` in
/// Rust, and JSON readers show it as such), and a value that is not finite becomes 0.
pub(crate) fn round(v: f64, decimals: i32) -> f64 {
    if !v.is_finite() {
        return 0.0;
    }
    let p = 10f64.powi(decimals);
    // Adding +0.0 turns -0.0 into +0.0 and leaves every other value as it is.
    (v * p).round() / p + 0.0
}

/// [`round`] to one decimal.
pub(crate) fn round1(v: f64) -> f64 {
    round(v, 1)
}

/// [`round`] to two decimals.
pub(crate) fn round2(v: f64) -> f64 {
    round(v, 2)
}

/// [`round`] to three decimals.
pub(crate) fn round3(v: f64) -> f64 {
    round(v, 3)
}

/// `part` as a percent of `whole` (0 when `whole` is not positive), two decimals.
pub(crate) fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        round2(part / whole * 100.0)
    } else {
        0.0
    }
}

/// Shortens `name` to about `max` characters without ever cutting it from the left: first the
/// contents of its generic arguments and parameter lists become `…` (longest first), then the
/// middle of its namespace, keeping the namespace's start and the type and method at its end.
/// A name that fits is kept whole; so is the last segment (the method) when nothing else is
/// left to shorten.
pub(crate) fn fit(name: &str, max: usize) -> String {
    fit_keeping(name, max, None)
}

/// [`fit`] that keeps the character at `keep` readable: no bracket group around it collapses.
fn fit_keeping(name: &str, max: usize, mut keep: Option<usize>) -> String {
    if name.chars().count() <= max {
        return name.to_string();
    }
    let mut s: Vec<char> = name.chars().collect();
    // 1. Bracket groups, longest first: `[...]`, `<...>`, `(...)`.
    while s.len() > max {
        let Some((open, close)) = longest_group(&s, keep) else {
            break;
        };
        s.splice(open + 1..close, std::iter::once('…'));
        // A group before the kept character moves it left.
        if let Some(k) = keep.as_mut().filter(|k| **k > close) {
            *k -= close - open - 2;
        }
    }
    if s.len() <= max {
        return s.into_iter().collect();
    }
    // 2. The middle of the dotted path: keep its start and its last two segments (Type.Method).
    let outside = depth_zero_dots(&s);
    if outside.len() >= 3 {
        let tail_from = outside[outside.len() - 2];
        let tail: String = s[tail_from..].iter().collect();
        let room = max.saturating_sub(tail.chars().count() + 1);
        // Whole leading segments, as many as fit (at least the first).
        let head_end = outside
            .iter()
            .copied()
            .rfind(|&d| d < tail_from && d < room)
            .unwrap_or(outside[0]);
        let head: String = s[..=head_end].iter().collect();
        return format!("{head}…{tail}");
    }
    s.into_iter().collect()
}

/// [`fit`] for one of several sibling names (a tree's children): when another sibling would
/// read the same once shortened (they differ only in arguments [`fit`] cuts), the namespaces
/// inside the brackets go instead, and the bracket group where they differ stays.
pub(crate) fn fit_among(name: &str, max: usize, siblings: &[&str]) -> String {
    let plain = fit(name, max);
    let clashes: Vec<&str> = siblings
        .iter()
        .copied()
        .filter(|o| *o != name && fit(o, max) == plain)
        .collect();
    if clashes.is_empty() {
        return plain;
    }
    let short = strip_inner_namespaces(name);
    // The first character where it differs from a clashing sibling.
    let differs = clashes
        .iter()
        .map(|o| {
            let o = strip_inner_namespaces(o);
            short
                .chars()
                .zip(o.chars())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .min()
        .unwrap_or(0);
    fit_keeping(&short, max, Some(differs))
}

/// `name` with the namespaces of the type names inside its brackets dropped:
/// `Cache`1[System.Collections.Generic.List`1[System.Int32]]` is `Cache`1[List`1[Int32]]`.
pub(crate) fn strip_inner_namespaces(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0i32;
    // Where the current name inside brackets starts in `out`.
    let mut seg_start = 0;
    for c in name.chars() {
        match c {
            '[' | '<' | '(' => {
                depth += 1;
                out.push(c);
                seg_start = out.len();
            }
            ']' | '>' | ')' | ',' | ' ' => {
                if matches!(c, ']' | '>' | ')') {
                    depth -= 1;
                }
                out.push(c);
                seg_start = out.len();
            }
            '.' if depth > 0 => out.truncate(seg_start),
            _ => out.push(c),
        }
    }
    out
}

/// `s` cut in its middle to `max` characters at most (`…` in the cut), the end kept longer
/// than the start (the type and method are at the end); whole when it fits.
pub(crate) fn cut_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 3 {
        return s.to_string();
    }
    let head = (max - 1) / 4;
    let tail = max - 1 - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// The bracket group (`open`, `close` indexes) with the most characters inside, not already
/// collapsed to `…`, and not around `keep`.
fn longest_group(s: &[char], keep: Option<usize>) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    let mut stack: Vec<(char, usize)> = Vec::new();
    for (i, &c) in s.iter().enumerate() {
        match c {
            '[' | '<' | '(' => stack.push((c, i)),
            ']' | '>' | ')' => {
                let want = match c {
                    ']' => '[',
                    '>' => '<',
                    _ => '(',
                };
                if let Some(pos) = stack.iter().rposition(|&(o, _)| o == want) {
                    let (_, open) = stack[pos];
                    stack.truncate(pos);
                    let inner = i - open - 1;
                    let collapsed = inner == 1 && s[open + 1] == '…';
                    let part_of_name = want == '<' && names_a_method(s, open);
                    let kept = keep.is_some_and(|k| open < k && k <= i);
                    if inner > 0
                        && !kept
                        && !collapsed
                        && !part_of_name
                        && best.is_none_or(|(o, e)| inner > e - o - 1)
                    {
                        best = Some((open, i));
                    }
                }
            }
            _ => {}
        }
    }
    best
}

/// True when the `<` at `open` starts a compiler-generated name (`<RenderAsync>d__18`,
/// `<>c`, `<<Main>b__0>d`): the method it names is what the frame is about, so it is never
/// shortened. Generic arguments follow a name (`List<int>`); these follow a separator.
fn names_a_method(s: &[char], open: usize) -> bool {
    open == 0 || matches!(s[open - 1], '.' | '+' | '<' | '[' | ',' | '(' | ' ')
}

/// Indexes of the dots outside any brackets.
fn depth_zero_dots(s: &[char]) -> Vec<usize> {
    let mut depth = 0i32;
    let mut dots = Vec::new();
    for (i, &c) in s.iter().enumerate() {
        match c {
            '[' | '<' | '(' => depth += 1,
            ']' | '>' | ')' => depth -= 1,
            '.' if depth == 0 => dots.push(i),
            _ => {}
        }
    }
    dots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_negative_zero() {
        let empty: f64 = Vec::<f64>::new().iter().sum();
        assert!(empty.is_sign_negative(), "Rust's empty f64 sum is -0.0");
        for r in [
            round1(empty),
            round2(empty),
            round3(-0.0001),
            percent(empty, 0.0),
        ] {
            assert!(r == 0.0 && r.is_sign_positive(), "{r:?}");
            assert_eq!(serde_json::to_string(&r).unwrap(), "0.0");
        }
        assert_eq!(round1(-1.26), -1.3);
        assert_eq!(round(f64::NAN, 2), 0.0);
    }

    #[test]
    fn names_are_never_cut_from_the_left() {
        let n = "System.Buffers.SharedArrayPool`1[System.Byte].Rent(int32)";
        assert_eq!(fit(n, 200), n);
        assert_eq!(
            fit(n, 48),
            "System.Buffers.SharedArrayPool`1[…].Rent(int32)"
        );
        assert_eq!(fit(n, 43), "System.Buffers.SharedArrayPool`1[…].Rent(…)");
        assert_eq!(fit(n, 40), "System.….SharedArrayPool`1[…].Rent(…)");
        // Then the namespace's middle; the type and method stay.
        let long =
            "Microsoft.AspNetCore.Mvc.ViewFeatures.Buffers.PagedBufferedTextWriter.FlushAsync";
        let f = fit(long, 50);
        assert!(
            f.starts_with("Microsoft.") && f.ends_with("PagedBufferedTextWriter.FlushAsync"),
            "{f}"
        );
        assert!(f.contains('…') && f.chars().count() <= 50, "{f}");
        // Nothing left to shorten: the method stays whole.
        assert_eq!(fit("Method", 3), "Method");
        let nested =
            "A.B`2[System.Collections.Generic.List`1[System.Int32],System.String].M(A.B,C.D)";
        let f = fit(nested, 15);
        assert!(f.ends_with(".M(…)") && f.starts_with("A."), "{f}");
    }

    #[test]
    fn compiler_generated_names_stay() {
        let n = "Microsoft.AspNetCore.Mvc.Razor.RazorView+<RenderPageCoreAsync>d__20.MoveNext";
        let f = fit(n, 50);
        assert!(
            f.starts_with("Microsoft.")
                && f.ends_with("RazorView+<RenderPageCoreAsync>d__20.MoveNext"),
            "{f}"
        );
        let n = "System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1[System.Threading.Tasks.VoidTaskResult,App.Pages.Index+<<ExecuteAsync>b__11_1>d].MoveNext";
        assert_eq!(
            fit(n, 100),
            "System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1[…].MoveNext"
        );
        // Generic arguments written with angle brackets are shortened as others are.
        assert_eq!(
            fit(
                "App.Cache.Get<System.Collections.Generic.List<int>>(string)",
                30
            ),
            "App.Cache.Get<…>(string)"
        );
    }

    #[test]
    fn bytes_and_names() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1536), "1.5 KB");
        assert_eq!(human_bytes(5 << 20), "5.0 MB");
        assert_eq!(human_bytes(3 << 30), "3.00 GB");
        assert_eq!(fit("short", 10), "short");
        assert_eq!(group(0), "0");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(100), "100");
    }
}
