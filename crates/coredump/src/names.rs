//! Type names as C# writes them, and as `dotnet-dump` and clrspy's heap views print them:
//! the runtime's ``List`1[[Workloads.LeakedItem, Workloads]]`` is `List<Workloads.LeakedItem>`,
//! ``Dictionary`2+Entry[[K, asm],[V, asm]][]`` is `Dictionary<K, V>+Entry[]`. A name the
//! runtime wrote otherwise (or a damaged one) is kept as it is.

use std::collections::VecDeque;

/// `s` split at the commas outside brackets.
fn top_level_parts(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// The C# spelling of the runtime's type name `name`.
pub(crate) fn csharp_name(name: &str) -> String {
    convert(name, 0).unwrap_or_else(|| name.to_string())
}

fn convert(name: &str, depth: usize) -> Option<String> {
    if depth > 32 {
        return None;
    }
    let Some(open) = name.find("[[") else {
        return Some(name.to_string());
    };
    let mut level = 0;
    let mut close = None;
    for (i, c) in name[open..].char_indices() {
        match c {
            '[' => level += 1,
            ']' => {
                level -= 1;
                if level == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close?;
    let (head, list, rest) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    let mut args: VecDeque<String> = VecDeque::new();
    for arg in top_level_parts(list) {
        // Each argument is `[Type, Assembly]`.
        let inner = arg.trim().strip_prefix('[')?.strip_suffix(']')?;
        args.push_back(convert(top_level_parts(inner).first()?.trim(), depth + 1)?);
    }
    let mut segments = Vec::new();
    for segment in head.split('+') {
        match segment.rsplit_once('`') {
            Some((base, arity)) => {
                let n: usize = arity.parse().ok()?;
                if n > args.len() {
                    return None;
                }
                let taken: Vec<String> = args.drain(..n).collect();
                segments.push(format!("{base}<{}>", taken.join(", ")));
            }
            None => segments.push(segment.to_string()),
        }
    }
    args.is_empty().then(|| segments.join("+") + rest)
}

#[cfg(test)]
mod tests {
    use super::csharp_name;

    #[test]
    fn generic_names_are_written_as_csharp_writes_them() {
        for (runtime, csharp) in [
            ("System.String", "System.String"),
            ("System.Byte[]", "System.Byte[]"),
            (
                "System.Collections.Generic.List`1[[Workloads.LeakedItem, Workloads]]",
                "System.Collections.Generic.List<Workloads.LeakedItem>",
            ),
            (
                "System.Collections.Generic.Dictionary`2+Entry[[System.String, System.Private.CoreLib],[System.Func`2[[Workloads.Options, Workloads],[System.Int32, System.Private.CoreLib]], System.Private.CoreLib]][]",
                "System.Collections.Generic.Dictionary<System.String, System.Func<Workloads.Options, System.Int32>>+Entry[]",
            ),
            (
                "System.Buffers.SharedArrayPool`1+<>c[[System.Char, System.Private.CoreLib]]",
                "System.Buffers.SharedArrayPool<System.Char>+<>c",
            ),
        ] {
            assert_eq!(csharp_name(runtime), csharp);
        }
    }

    #[test]
    fn a_damaged_name_is_kept_as_it_is() {
        for bad in [
            "List`1[[A, B]",
            "List`2[[A, B]]",
            "X`z[[A, B]]",
            "[[",
            "A[[B]]",
            "",
        ] {
            assert_eq!(csharp_name(bad), bad);
        }
    }
}
