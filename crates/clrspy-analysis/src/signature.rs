//! Method signatures shortened for frame names: the parameter types of an overload without
//! `class`/`valuetype` and namespaces, generic arguments kept whole
//! (``(…,IEnumerable`1<KeyValuePair`2<String,Object>>,Func`1<Instrument>)``).

/// `instance void  (int32,class System.String)` → `int32,String`.
pub(crate) fn short_signature(sig: &str) -> String {
    let inner = sig
        .find('(')
        .and_then(|a| sig.rfind(')').filter(|&b| b > a).map(|b| &sig[a + 1..b]))
        .unwrap_or("");
    split_top_level(inner)
        .into_iter()
        .map(short_type)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

/// The parts of a parameter list between its commas outside any brackets (a generic type's
/// arguments stay with it).
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '[' | '(' => depth += 1,
            '>' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[from..]);
    parts
}

/// A type of a signature without `class `/`valuetype ` and without namespaces, its generic
/// arguments too: `class System.Func`1<class System.String>` is `Func`1<String>`.
fn short_type(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut rest = t.trim();
    while !rest.is_empty() {
        let at_word = out.is_empty() || out.ends_with(['<', ',', ' ', '[', '(']);
        if at_word {
            if let Some(r) = rest
                .strip_prefix("value class ")
                .or_else(|| rest.strip_prefix("class "))
                .or_else(|| rest.strip_prefix("valuetype "))
            {
                rest = r.trim_start();
                continue;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    strip_qualifiers(&out)
}

/// Drops the namespace of every dotted name (`A.B.C<D.E>` is `C<E>`).
fn strip_qualifiers(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut seg_start = 0;
    for c in s.chars() {
        if c == '.' {
            out.truncate(seg_start);
            continue;
        }
        out.push(c);
        if matches!(c, '<' | ',' | '[' | '(' | '>' | ']' | ')' | ' ') {
            seg_start = out.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_parameters_keep_their_arguments() {
        // The signatures .NET 10 wrote for these overloads (Method/DCStopVerbose).
        let sig = "class System.Diagnostics.Metrics.Instrument  (class System.Type,class System.String,class System.String,class System.String,class System.String,class System.Collections.Generic.IEnumerable`1<valuetype System.Collections.Generic.KeyValuePair`2<class System.String,class System.Object>>,class System.Func`1<class System.Diagnostics.Metrics.Instrument>)";
        assert_eq!(
            short_signature(sig),
            "Type,String,String,String,String,IEnumerable`1<KeyValuePair`2<String,Object>>,Func`1<Instrument>"
        );
        let sig = "int32  (valuetype System.ReadOnlySpan`1<class System.Threading.WaitHandle>,bool,int32)";
        assert_eq!(
            short_signature(sig),
            "ReadOnlySpan`1<WaitHandle>,bool,int32"
        );
        assert_eq!(short_signature("void  (int32,!!0&)"), "int32,!!0&");
        // The runtime writes value types as `value class` too.
        assert_eq!(
            short_signature("void  (value class System.ReadOnlySpan`1<wchar>)"),
            "ReadOnlySpan`1<wchar>"
        );
        assert_eq!(short_signature("void  ()"), "");
    }
}
