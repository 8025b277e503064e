//! The HTML report's heap pages, in the trace report's page shell (`html::markup`): one
//! snapshot (totals; types by count, shallow and retained bytes; roots by kind; the shortest
//! paths from the roots to the top types; an icicle of retained bytes along the dominator
//! tree folded by type), and two snapshots compared (the types by growth, and what holds the
//! types that grew most). Tables sort by a click on their heading (a few lines of inline
//! script); nothing is fetched. Sizes are bounded whatever the heap: tables by row counts,
//! the icicle by `heap_stacks::pictured`'s budget.

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::heap::diff::diff;
use clrspy_analysis::heap::retention::{kind_name, RetentionTree};
use clrspy_analysis::heap::{HeapModel, RootPath};

use super::markup::{embed, escape, page_end, page_head};
use crate::flamegraph;
use crate::heap_stacks;
use crate::stack_unit::StackUnit;
use crate::units::{group, human_bytes};

/// What the heap pages show.
#[derive(Clone, Debug)]
pub struct Options {
    /// Rows of the types table (and of the diff).
    pub types: usize,
    /// Rows of the roots table.
    pub roots: usize,
    /// Types whose paths from the roots are shown.
    pub(crate) path_types: usize,
    /// Paths shown per type.
    pub paths: usize,
    /// Paths shown under each path of the icicle.
    pub width: usize,
    /// Paths the icicle shows at most.
    pub budget: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            types: 300,
            roots: 50,
            path_types: 5,
            paths: 5,
            width: 12,
            budget: 800,
        }
    }
}

/// The sortable tables' style and script: a click on a heading sorts by that column
/// (numbers by their `data-v`), a second click reverses.
const SORTABLE: &str = "<style>table.sortable th{cursor:pointer;user-select:none}\
table.sortable th:hover{text-decoration:underline}td.n{white-space:nowrap}.grew{color:#a11}.shrank{color:#161}</style>\
<script>document.addEventListener('click',function(e){var th=e.target.closest('table.sortable th');\
if(!th)return;var t=th.closest('table'),i=th.cellIndex,num=th.classList.contains('n'),\
rows=Array.prototype.slice.call(t.querySelectorAll('tr')).slice(1),d=th.dataset.d==='1'?-1:1;\
th.dataset.d=d===1?'1':'0';var key=function(r){var c=r.cells[i];return num?Number(c.dataset.v):c.textContent;};\
rows.sort(function(a,b){var x=key(a),y=key(b);return (x<y?1:x>y?-1:0)*d;});\
rows.forEach(function(r){t.tBodies[0].appendChild(r);});});</script>";

/// A numeric cell: shown as `shown`, sorted by `v`.
fn num(h: &mut String, v: impl std::fmt::Display, shown: &str) {
    let _ = write!(h, "<td class=n data-v={v}>{}</td>", escape(shown));
}

fn bytes_cell(h: &mut String, b: u64) {
    num(h, b, &human_bytes(b));
}

fn count_cell(h: &mut String, c: u64) {
    num(h, c, &group(c));
}

fn signed_bytes(d: i64) -> String {
    let s = human_bytes(d.unsigned_abs());
    match d.signum() {
        1 => format!("+{s}"),
        -1 => format!("−{s}"),
        _ => s,
    }
}

fn signed_count(d: i64) -> String {
    let s = group(d.unsigned_abs());
    match d.signum() {
        1 => format!("+{s}"),
        -1 => format!("−{s}"),
        _ => s,
    }
}

fn facts(h: &mut String, rows: &[(&str, String)]) {
    h.push_str("<table class=facts>");
    for (label, value) in rows {
        let _ = write!(h, "<tr><td>{label}</td><td>{}</td></tr>", escape(value));
    }
    h.push_str("</table>");
}

/// Writes the page of one snapshot, titled `title`.
pub fn write(m: &HeapModel, title: &str, o: &Options, out: &mut dyn Write) -> io::Result<()> {
    let tree = RetentionTree::new(m);
    let g = m.graph();
    let mut h = page_head(title);
    h.push_str(SORTABLE);
    facts(
        &mut h,
        &[
            ("objects", group(m.objects())),
            (
                "bytes",
                format!("{} ({} bytes)", human_bytes(m.bytes()), group(m.bytes())),
            ),
            (
                "reachable from a root",
                format!(
                    "{} ({} bytes)",
                    human_bytes(tree.total_bytes()),
                    group(tree.total_bytes())
                ),
            ),
            ("unreachable objects", group(m.unreachable_objects())),
            ("references", group(g.edge_count() as u64)),
            ("types", group(m.types().len() as u64)),
            ("roots", group(m.roots().len() as u64)),
        ],
    );
    types_table(&mut h, m, o.types);
    roots_tables(&mut h, m, o.roots);
    paths(&mut h, m, o);
    icicle(&mut h, &tree, title, o)?;
    h.push_str(&page_end());
    out.write_all(h.as_bytes())
}

fn types_table(h: &mut String, m: &HeapModel, rows: usize) {
    let types = m.types();
    let _ = write!(
        h,
        "<h2 id=types>Types by retained bytes ({} of {}; click a heading to sort)</h2>\
<table class=sortable id=types-table><tbody><tr><th class=n>Retained</th><th class=n>Shallow</th>\
<th class=n>Count</th><th>Type</th></tr>",
        rows.min(types.len()),
        types.len()
    );
    for t in types.iter().take(rows) {
        h.push_str("<tr>");
        bytes_cell(h, t.retained_bytes);
        bytes_cell(h, t.bytes);
        count_cell(h, t.count);
        let _ = write!(h, "<td>{}</td></tr>", escape(&t.name));
    }
    h.push_str("</tbody></table>");
    if types.len() > rows {
        let _ = write!(
            h,
            "<p class=note>{} more types (clrspy heap FILE --json --top N lists them all)</p>",
            types.len() - rows
        );
    }
}

fn roots_tables(h: &mut String, m: &HeapModel, rows: usize) {
    // Per kind: roots, objects held directly, held and retained bytes.
    let mut kinds: Vec<(String, u64, u64, u64, u64)> = Vec::new();
    for r in m.roots() {
        let k = kind_name(r.kind);
        let i = match kinds.iter().position(|e| e.0 == k) {
            Some(i) => i,
            None => {
                kinds.push((k, 0, 0, 0, 0));
                kinds.len() - 1
            }
        };
        let e = &mut kinds[i];
        e.1 += 1;
        e.2 += r.objects;
        e.3 += r.held_bytes;
        e.4 += r.retained_bytes;
    }
    kinds.sort_by(|a, b| b.3.cmp(&a.3).then(a.0.cmp(&b.0)));
    h.push_str(
        "<h2 id=roots>Roots by kind</h2><p class=note>held: each object counted for the first \
root that reaches it, statics first; retained: what only those roots keep alive (dominator tree)</p>\
<table class=sortable id=root-kinds><tbody><tr><th>Kind</th><th class=n>Roots</th>\
<th class=n>Objects</th><th class=n>Held</th><th class=n>Retained</th></tr>",
    );
    for (k, roots, objects, held, retained) in &kinds {
        let _ = write!(h, "<tr><td>{}</td>", escape(k));
        count_cell(h, *roots);
        count_cell(h, *objects);
        bytes_cell(h, *held);
        bytes_cell(h, *retained);
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    let _ = write!(
        h,
        "<h2>Roots by held bytes ({} of {})</h2><table class=sortable id=roots-table><tbody><tr>\
<th class=n>Held</th><th class=n>Retained</th><th class=n>Objects</th><th>Kind</th><th>Root</th></tr>",
        rows.min(m.roots().len()),
        m.roots().len()
    );
    for r in m.roots().iter().take(rows) {
        h.push_str("<tr>");
        bytes_cell(h, r.held_bytes);
        bytes_cell(h, r.retained_bytes);
        count_cell(h, r.objects);
        let _ = write!(
            h,
            "<td>{}</td><td>{}</td></tr>",
            escape(&kind_name(r.kind)),
            escape(&r.name)
        );
    }
    h.push_str("</tbody></table>");
}

fn path_list(h: &mut String, paths: &[RootPath]) {
    if paths.is_empty() {
        h.push_str("<p class=note>no root reaches it</p>");
        return;
    }
    h.push_str("<table class=paths><tbody><tr><th class=n>Objects</th><th class=n>Bytes</th><th>Shortest path from a root</th></tr>");
    for p in paths {
        h.push_str("<tr>");
        count_cell(h, p.objects);
        bytes_cell(h, p.bytes);
        let _ = write!(h, "<td>{}</td></tr>", escape(&p.steps.join(" → ")));
    }
    h.push_str("</tbody></table>");
}

fn paths(h: &mut String, m: &HeapModel, o: &Options) {
    h.push_str("<h2 id=paths>What holds the top types: shortest paths from the roots</h2>");
    let top: Vec<&str> = m
        .types()
        .iter()
        .take(o.path_types)
        .map(|t| t.name.as_str())
        .collect();
    let paths = m.paths_to_types(&top, o.paths);
    for (t, p) in m.types().iter().zip(&paths) {
        let _ = write!(
            h,
            "<h3>{}</h3><p class=note>{} objects, {} shallow, {} retained</p>",
            escape(&t.name),
            group(t.count),
            human_bytes(t.bytes),
            human_bytes(t.retained_bytes)
        );
        path_list(h, p);
    }
}

fn icicle(h: &mut String, tree: &RetentionTree, title: &str, o: &Options) -> io::Result<()> {
    let stacks = heap_stacks::pictured(tree, o.width, o.budget);
    let total = tree.total_bytes();
    let mut svg = Vec::new();
    let view = flamegraph::View {
        top_down: true,
        root_label: Some(format!("all roots: {} retained", human_bytes(total))),
        ..flamegraph::View::default()
    };
    flamegraph::write_view(
        &mut svg,
        &stacks,
        StackUnit::RetainedBytes,
        &format!("{title} — retained bytes"),
        &|_| String::new(),
        &view,
    )?;
    let _ = write!(
        h,
        "<h2 id=icicle>Retained bytes along the dominator tree (root kind, root, then types; a bar's \
width is what it keeps alive; click to zoom, Ctrl+F to search)</h2><p class=note>the {} heaviest \
of {} paths, {} under each at most; the rest of each is one <code>[other: N paths]</code> bar. \
<code>clrspy convert FILE --to folded</code> writes every path.</p>",
        o.budget.min(tree.nodes.len()),
        tree.nodes.len(),
        o.width
    );
    embed(h, "icicle", "icicle of retained bytes", &svg);
    Ok(())
}

/// Writes the page comparing two snapshots (`old` first), titled `title`.
pub(crate) fn write_diff(
    old: &HeapModel,
    new: &HeapModel,
    title: &str,
    o: &Options,
    out: &mut dyn Write,
) -> io::Result<()> {
    let d = diff(old, new);
    let mut h = page_head(title);
    h.push_str(SORTABLE);
    let delta = new.bytes() as i64 - old.bytes() as i64;
    facts(
        &mut h,
        &[
            (
                "objects",
                format!(
                    "{} → {} ({})",
                    group(old.objects()),
                    group(new.objects()),
                    signed_count(new.objects() as i64 - old.objects() as i64)
                ),
            ),
            (
                "bytes",
                format!(
                    "{} → {} ({})",
                    human_bytes(old.bytes()),
                    human_bytes(new.bytes()),
                    signed_bytes(delta)
                ),
            ),
            (
                "types",
                format!("{} → {}", old.types().len(), new.types().len()),
            ),
        ],
    );
    let grew: Vec<_> = d.iter().filter(|t| t.bytes_delta > 0).take(3).collect();
    if grew.is_empty() {
        h.push_str("<p id=verdict>No type grew.</p>");
    } else {
        let names: Vec<String> = grew
            .iter()
            .map(|t| {
                format!(
                    "<b>{}</b> ({} objects, {})",
                    escape(&t.name),
                    signed_count(t.count_delta),
                    signed_bytes(t.bytes_delta)
                )
            })
            .collect();
        let _ = write!(h, "<p id=verdict>Grew most: {}.</p>", names.join(", "));
    }
    let _ = write!(
        h,
        "<h2 id=diff>Types by growth ({} of {}; click a heading to sort)</h2>\
<table class=sortable id=diff-table><tbody><tr><th class=n>Count old</th><th class=n>Count new</th>\
<th class=n>Δ count</th><th class=n>Bytes old</th><th class=n>Bytes new</th><th class=n>Δ bytes</th>\
<th>Type</th></tr>",
        o.types.min(d.len()),
        d.len()
    );
    for t in d.iter().take(o.types) {
        let class = match t.bytes_delta.signum() {
            1 => " class=grew",
            -1 => " class=shrank",
            _ => "",
        };
        let _ = write!(h, "<tr{class}>");
        count_cell(&mut h, t.count_old);
        count_cell(&mut h, t.count_new);
        num(&mut h, t.count_delta, &signed_count(t.count_delta));
        bytes_cell(&mut h, t.bytes_old);
        bytes_cell(&mut h, t.bytes_new);
        num(&mut h, t.bytes_delta, &signed_bytes(t.bytes_delta));
        let mark = if t.count_old == 0 { " (new)" } else { "" };
        let _ = write!(h, "<td>{}{mark}</td></tr>", escape(&t.name));
    }
    h.push_str("</tbody></table>");
    if d.len() > o.types {
        let _ = write!(
            h,
            "<p class=note>{} more types (clrspy heap diff OLD NEW --json lists them all)</p>",
            d.len() - o.types
        );
    }
    if !grew.is_empty() {
        h.push_str("<h2 id=paths>What holds them in NEW: shortest paths from the roots</h2>");
        let names: Vec<&str> = grew.iter().map(|t| t.name.as_str()).collect();
        let paths = new.paths_to_types(&names, o.paths);
        for (t, p) in grew.iter().zip(&paths) {
            let _ = write!(h, "<h3>{}</h3>", escape(&t.name));
            path_list(&mut h, p);
        }
    }
    h.push_str(&page_end());
    out.write_all(h.as_bytes())
}

#[cfg(test)]
mod tests;
