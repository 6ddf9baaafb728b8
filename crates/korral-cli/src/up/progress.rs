//! Showing how `korral up` converges: a live block of status lines redrawn in place on a
//! terminal, one plain line per change otherwise (pipes, logs, tests).
//!
//! The live block is laid out for the terminal's width: a value too long for one row (a long
//! pod list) continues on rows of its own, indented under the value column, broken after its
//! `, ` separators. Each redraw moves up and clears exactly the rows the previous block took
//! on screen, so no stale status line is left behind.

use std::io::{IsTerminal, Write};

/// The width assumed when the terminal's cannot be read.
const DEFAULT_WIDTH: usize = 80;
/// Narrower terminals are laid out as if this wide (the terminal wraps; rows are counted).
const MIN_WIDTH: usize = 20;

/// One status line: a label and its current value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// What the line is about (`Deployment`, `status.nodes`, …).
    pub label: &'static str,
    /// Its current value.
    pub value: String,
}

impl Line {
    /// A line.
    pub fn new(label: &'static str, value: impl Into<String>) -> Self {
        Self {
            label,
            value: value.into(),
        }
    }
}

/// Where progress goes.
pub struct Progress {
    live: bool,
    shown: Vec<Line>,
    /// The live block on screen: how many terminal rows it takes.
    block: LiveBlock,
}

impl Progress {
    /// Live redrawing when stdout is a terminal, plain lines otherwise.
    pub fn for_stdout() -> Self {
        let live = std::io::stdout().is_terminal();
        let mut progress = Self::new(live);
        if live {
            progress.block.width = terminal_width();
        }
        progress
    }

    /// A display in the given mode.
    pub fn new(live: bool) -> Self {
        Self {
            live,
            shown: Vec::new(),
            block: LiveBlock::new(DEFAULT_WIDTH),
        }
    }

    /// Shows `lines` as the current state.
    pub fn update(&mut self, lines: Vec<Line>) {
        let mut out = std::io::stdout().lock();
        if self.live {
            if lines == self.shown {
                return;
            }
            self.block.width = terminal_width();
            let _ = out.write_all(self.block.redraw(&lines).as_bytes());
        } else {
            for line in changed(&self.shown, &lines) {
                let _ = writeln!(out, "{}: {}", line.label, line.value);
            }
        }
        let _ = out.flush();
        self.shown = lines;
    }

    /// Prints a one-off message (above the live block on a terminal).
    pub fn message(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.live {
            let _ = out.write_all(self.block.message(text, &self.shown).as_bytes());
        } else {
            let _ = writeln!(out, "{text}");
        }
        let _ = out.flush();
    }
}

/// The terminal's width in columns: `stty size` on the controlling terminal, else `COLUMNS`,
/// else [`DEFAULT_WIDTH`].
fn terminal_width() -> usize {
    let from_stty = std::fs::File::open("/dev/tty").ok().and_then(|tty| {
        let out = std::process::Command::new("stty")
            .arg("size")
            .stdin(tty)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        text.split_whitespace().nth(1)?.parse::<usize>().ok()
    });
    from_stty
        .or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .filter(|w| *w > 0)
        .unwrap_or(DEFAULT_WIDTH)
}

/// The live block's state on a terminal of `width` columns: what each redraw must erase.
#[derive(Debug, Clone)]
pub struct LiveBlock {
    /// The terminal's width in columns.
    pub width: usize,
    /// Terminal rows the block drawn last takes (0: nothing drawn).
    rows: usize,
}

impl LiveBlock {
    /// Nothing drawn yet, on a terminal `width` columns wide.
    pub fn new(width: usize) -> Self {
        Self { width, rows: 0 }
    }

    /// The bytes that erase the block drawn last: for each of its rows, cursor up one row
    /// and clear that row; the cursor ends at the start of the block's first row.
    fn erase(&mut self) -> String {
        let mut s = String::new();
        for _ in 0..self.rows {
            s.push_str("\x1b[1A\x1b[2K");
        }
        if self.rows > 0 {
            s.push('\r');
        }
        self.rows = 0;
        s
    }

    /// The bytes that draw `lines` below the cursor, counting the rows they take.
    fn draw(&mut self, lines: &[Line]) -> String {
        let mut s = String::new();
        for row in layout(lines, self.width) {
            self.rows += screen_rows(&row, self.width);
            s.push_str(&row);
            s.push('\n');
        }
        s
    }

    /// The bytes that replace the block drawn last with `lines`.
    pub fn redraw(&mut self, lines: &[Line]) -> String {
        let mut s = self.erase();
        s.push_str(&self.draw(lines));
        s
    }

    /// The bytes that print `text` where the block was and draw `lines` again below it.
    pub fn message(&mut self, text: &str, lines: &[Line]) -> String {
        let mut s = self.erase();
        s.push_str(text);
        s.push('\n');
        s.push_str(&self.draw(lines));
        s
    }
}

/// How many terminal rows `row` takes on a terminal `width` columns wide (a row filling the
/// width exactly still takes one).
fn screen_rows(row: &str, width: usize) -> usize {
    let chars = row.chars().count();
    chars.div_ceil(width.max(1)).max(1)
}

/// The rows of the block for a terminal `width` columns wide: `  label  value`, labels
/// aligned; a value too long for the row continues on rows indented to the value column,
/// broken after `, ` where possible and within words otherwise.
pub fn layout(lines: &[Line], width: usize) -> Vec<String> {
    let label_width = lines
        .iter()
        .map(|l| l.label.chars().count())
        .max()
        .unwrap_or(0);
    let indent = 2 + label_width + 2;
    let width = width.max(MIN_WIDTH);
    // At least 10 columns for values, even if the labels are very long.
    let room = width.saturating_sub(indent).max(10);
    let mut rows = Vec::new();
    for line in lines {
        let pieces = wrap(&line.value, room);
        for (i, piece) in pieces.iter().enumerate() {
            if i == 0 {
                rows.push(format!("  {:<label_width$}  {piece}", line.label));
            } else {
                rows.push(format!("{:indent$}{piece}", ""));
            }
        }
    }
    rows
}

/// `value` in pieces of at most `room` characters, broken after `, ` separators (the
/// trailing space dropped), and within a part longer than `room`.
fn wrap(value: &str, room: usize) -> Vec<String> {
    let room = room.max(1);
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    let parts: Vec<&str> = value.split_inclusive(", ").collect();
    for part in parts {
        let fits = current.chars().count() + part.trim_end().chars().count() <= room;
        if !current.is_empty() && !fits {
            pieces.push(current.trim_end().to_owned());
            current.clear();
        }
        current.push_str(part);
        // A single part longer than the room is cut within it.
        while current.trim_end().chars().count() > room {
            let cut: String = current.chars().take(room).collect();
            let rest: String = current.chars().skip(room).collect();
            pieces.push(cut);
            current = rest;
        }
    }
    if !current.is_empty() || pieces.is_empty() {
        pieces.push(current.trim_end().to_owned());
    }
    pieces
}

/// The lines of `next` that are new or differ from `shown` (matched by label).
pub fn changed<'a>(shown: &[Line], next: &'a [Line]) -> Vec<&'a Line> {
    next.iter()
        .filter(|line| {
            !shown
                .iter()
                .any(|s| s.label == line.label && s.value == line.value)
        })
        .collect()
}

/// The terminal the end-to-end test reads `korral up`'s screen with (shared, not copied).
#[cfg(test)]
#[path = "../../tests/terminal/mod.rs"]
mod terminal;

#[cfg(test)]
mod tests {
    use super::*;

    use super::terminal::Screen;

    fn pods(n: usize) -> String {
        (0..n)
            .map(|i| format!("memcached-sample-6d8f9c7b5-pod{i:02} (Running, ready)"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn block(n: usize, state: &str) -> Vec<Line> {
        vec![
            Line::new("control plane", "https://127.0.0.1:6443"),
            Line::new("Deployment", format!("{n}/{n} ready")),
            Line::new("Pods", pods(n)),
            Line::new("state", state),
        ]
    }

    #[test]
    fn plain_mode_reports_only_changes() {
        let a = vec![
            Line::new("Deployment", "0/3 ready"),
            Line::new("Pods", "none"),
        ];
        let b = vec![
            Line::new("Deployment", "3/3 ready"),
            Line::new("Pods", "none"),
        ];
        let first: Vec<&str> = changed(&[], &a).iter().map(|l| l.label).collect();
        assert_eq!(first, vec!["Deployment", "Pods"]);
        let second: Vec<String> = changed(&a, &b).iter().map(|l| l.value.clone()).collect();
        assert_eq!(second, vec!["3/3 ready".to_string()]);
        assert!(changed(&b, &b).is_empty());
    }

    #[test]
    fn long_values_wrap_under_the_value_column() {
        let width = 80;
        let rows = layout(&block(5, "converging"), width);
        assert!(rows.iter().all(|r| r.chars().count() <= width), "{rows:#?}");
        // Labels aligned; pods continue under the value column.
        assert!(
            rows[0].starts_with("  control plane  https://"),
            "{rows:#?}"
        );
        assert!(
            rows[2].starts_with("  Pods           memcached-sample-"),
            "{rows:#?}"
        );
        let state = rows.len() - 1;
        assert!(state > 3, "the pod list wraps: {rows:#?}");
        assert!(rows[state].starts_with("  state "), "{rows:#?}");
        for row in &rows[3..state] {
            assert!(row.starts_with(&" ".repeat(17)), "{rows:#?}");
        }
        // Broken after separators: nothing lost.
        let joined = rows[2..state]
            .iter()
            .map(|r| r.trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined.trim_start_matches("Pods").trim(), pods(5));
        // A word longer than the room is cut, not lost.
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), vec![""]);
        assert_eq!(wrap("a, b, c", 4), vec!["a,", "b, c"]);
        assert_eq!(wrap("a, b, c", 5), vec!["a, b,", "c"]);
    }

    /// The terminal shows the messages and the current block only, whatever the blocks
    /// before it looked like: longer, wrapped by the terminal, or with more rows.
    #[test]
    fn redraws_leave_no_stale_status_block() {
        for width in [40, 80, 200] {
            let mut screen = Screen::new(width);
            let mut live = LiveBlock::new(width);
            let messages = ["installed CRD memcacheds", "operator running"];
            screen.feed(&live.message(messages[0], &[]));
            let sequence = [
                block(1, "converging"),
                block(8, "converging"),
                block(3, "converging"),
                block(0, "converging"),
                block(12, "converged"),
                block(2, "converged"),
            ];
            for (i, lines) in sequence.iter().enumerate() {
                screen.feed(&live.redraw(lines));
                let mut expected: Vec<String> = vec![messages[0].to_owned()];
                if i >= 2 {
                    expected.push(messages[1].to_owned());
                }
                expected.extend(
                    layout(lines, width)
                        .into_iter()
                        .map(|r| r.trim_end().to_owned()),
                );
                assert_eq!(screen.text(), expected, "width {width}, step {i}");
                if i == 1 {
                    screen.feed(&live.message(messages[1], lines));
                }
            }
        }
    }

    /// Rows that the terminal wraps itself (a layout wider than the terminal, e.g. after a
    /// resize to a narrower window) are counted too.
    #[test]
    fn rows_wrapped_by_the_terminal_are_erased() {
        let mut screen = Screen::new(30);
        let mut live = LiveBlock::new(30);
        // Laid out for 30 columns, but the long label forces rows wider than that.
        let wide = vec![Line::new(
            "a label far wider than the terminal",
            "value one, value two",
        )];
        screen.feed(&live.redraw(&wide));
        assert!(screen.text().len() > 1, "{:?}", screen.text());
        screen.feed(&live.redraw(&[Line::new("x", "y")]));
        assert_eq!(screen.text(), vec!["  x  y".to_owned()]);
        assert_eq!(screen_rows("", 30), 1);
        assert_eq!(screen_rows(&"a".repeat(30), 30), 1);
        assert_eq!(screen_rows(&"a".repeat(31), 30), 2);
    }
}
