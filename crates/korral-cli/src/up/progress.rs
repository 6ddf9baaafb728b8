//! Showing how `korral up` converges: a live block of status lines redrawn in place on a
//! terminal, one plain line per change otherwise (pipes, logs, tests).

use std::io::{IsTerminal, Write};

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
    /// Lines of the block currently on screen (live mode).
    drawn: usize,
}

impl Progress {
    /// Live redrawing when stdout is a terminal, plain lines otherwise.
    pub fn for_stdout() -> Self {
        Self::new(std::io::stdout().is_terminal())
    }

    /// A display in the given mode.
    pub fn new(live: bool) -> Self {
        Self {
            live,
            shown: Vec::new(),
            drawn: 0,
        }
    }

    /// Shows `lines` as the current state.
    pub fn update(&mut self, lines: Vec<Line>) {
        let mut out = std::io::stdout().lock();
        if self.live {
            if lines == self.shown {
                return;
            }
            let _ = out.write_all(render_block(&lines, self.drawn).as_bytes());
            self.drawn = lines.len();
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
        if self.live && self.drawn > 0 {
            // Clear the block, print the message, draw the block again below it.
            let mut s = format!("\x1b[{}F\x1b[J", self.drawn);
            s.push_str(text);
            s.push('\n');
            s.push_str(&render_block(&self.shown, 0));
            let _ = out.write_all(s.as_bytes());
        } else {
            let _ = writeln!(out, "{text}");
        }
        let _ = out.flush();
    }
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

/// The escape sequence that replaces a block of `previous` lines with `lines`.
pub fn render_block(lines: &[Line], previous: usize) -> String {
    let width = lines.iter().map(|l| l.label.len()).max().unwrap_or(0);
    let mut s = String::new();
    if previous > 0 {
        // Up to the first line of the old block, clear to the end of the screen.
        s.push_str(&format!("\x1b[{previous}F\x1b[J"));
    }
    for line in lines {
        s.push_str(&format!("  {:<width$}  {}\n", line.label, line.value));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn live_mode_redraws_the_block_in_place() {
        let lines = vec![
            Line::new("CRD", "Established"),
            Line::new("Deployment", "1/3 ready"),
        ];
        let first = render_block(&lines, 0);
        assert!(!first.contains('\x1b'));
        assert!(first.contains("  CRD         Established\n"));
        let again = render_block(&lines, 2);
        assert!(again.starts_with("\x1b[2F\x1b[J"));
    }
}
