//! The unified diff upstream appends to "spec is immutable" messages (`diff.Diff` of two
//! objects marshalled as indented JSON with one-space indentation, three lines of context).

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::PrettyFormatter;

/// A value as Go marshals it: a JSON value (map keys sorted, as Go sorts them) or a struct
/// whose fields keep their declaration order.
pub(crate) enum GoValue {
    /// A plain JSON value.
    Json(Value),
    /// A struct: fields in order.
    Struct(Vec<(&'static str, GoValue)>),
    /// A non-nil slice: elements in order.
    List(Vec<GoValue>),
}

/// `value` as Go's `json.MarshalIndent(v, "", " ")` writes it.
pub(crate) fn marshal_indent(value: &GoValue) -> String {
    let mut out = String::new();
    write(value, 0, &mut out);
    out
}

fn write(value: &GoValue, depth: usize, out: &mut String) {
    match value {
        GoValue::Json(v) => {
            let mut buf = Vec::new();
            let mut ser = serde_json::Serializer::with_formatter(
                &mut buf,
                PrettyFormatter::with_indent(b" "),
            );
            if v.serialize(&mut ser).is_ok() {
                let text = String::from_utf8(buf).unwrap_or_default();
                let pad = " ".repeat(depth);
                out.push_str(&text.replace('\n', &format!("\n{pad}")));
            }
        }
        GoValue::Struct(fields) if fields.is_empty() => out.push_str("{}"),
        GoValue::List(items) if items.is_empty() => out.push_str("[]"),
        GoValue::List(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&" ".repeat(depth + 1));
                write(item, depth + 1, out);
                if i + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(&" ".repeat(depth));
            out.push(']');
        }
        GoValue::Struct(fields) => {
            out.push_str("{\n");
            for (i, (name, v)) in fields.iter().enumerate() {
                out.push_str(&" ".repeat(depth + 1));
                out.push_str(&format!("{name:?}: "));
                write(v, depth + 1, out);
                if i + 1 < fields.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(&" ".repeat(depth));
            out.push('}');
        }
    }
}

/// The unified diff (hunks only, three lines of context, every line ending in a newline) of
/// `old` and `new`; empty when they are equal.
pub(crate) fn unified(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Longest common subsequence table, from the ends.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // The edit script: (kind, old index, new index) with kind ' ', '-' or '+'.
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', i, j));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', i, j));
            i += 1;
        } else {
            ops.push(('+', i, j));
            j += 1;
        }
    }
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = (0..ops.len()).filter(|k| ops[*k].0 != ' ').collect();
    let mut out = String::new();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = (changed[k] + CONTEXT + 1).min(ops.len());
        while k + 1 < changed.len() && changed[k + 1] <= end + CONTEXT {
            k += 1;
            end = (changed[k] + CONTEXT + 1).min(ops.len());
        }
        let hunk = &ops[start..end];
        let old_count = hunk.iter().filter(|o| o.0 != '+').count();
        let new_count = hunk.iter().filter(|o| o.0 != '-').count();
        let (old_start, new_start) = (hunk[0].1 + 1, hunk[0].2 + 1);
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(old_start, old_count),
            range(new_start, new_count)
        ));
        for (kind, oi, nj) in hunk {
            let line = if *kind == '+' { b[*nj] } else { a[*oi] };
            out.push(*kind);
            out.push_str(line);
            out.push('\n');
        }
        k += 1;
    }
    out
}

/// A hunk range: `start,count` (`start` alone for one line, `start-1,0` for none).
fn range(start: usize, count: usize) -> String {
    match count {
        1 => start.to_string(),
        0 => format!("{},0", start - 1),
        n => format!("{start},{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_upstreams_pvc_diff() {
        let spec = |size: &str| {
            GoValue::Struct(vec![
                ("AccessModes", GoValue::Json(json!(["ReadWriteOnce"]))),
                ("Selector", GoValue::Json(Value::Null)),
                (
                    "Resources",
                    GoValue::Struct(vec![
                        ("Limits", GoValue::Json(Value::Null)),
                        ("Requests", GoValue::Json(json!({"storage": size}))),
                    ]),
                ),
                ("VolumeName", GoValue::Json(json!(""))),
                ("StorageClassName", GoValue::Json(Value::Null)),
            ])
        };
        let diff = unified(
            &marshal_indent(&spec("1Gi")),
            &marshal_indent(&spec("500Mi")),
        );
        assert_eq!(
            diff,
            "@@ -6,7 +6,7 @@\n  \"Resources\": {\n   \"Limits\": null,\n   \"Requests\": {\n-   \"storage\": \"1Gi\"\n+   \"storage\": \"500Mi\"\n   }\n  },\n  \"VolumeName\": \"\",\n"
        );
        assert_eq!(unified("a\nb", "a\nb"), "");
    }
}
