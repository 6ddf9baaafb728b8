//! A minimal terminal for tests: a grid of a given width that wraps long rows (deferred wrap,
//! as xterm does) and understands the sequences `korral up` writes (cursor up, line and screen
//! clears; colours are ignored), so a test can read what a user's screen shows at the end.

/// The screen: every row written so far (scrollback included) and the cursor.
pub struct Screen {
    width: usize,
    rows: Vec<Vec<char>>,
    row: usize,
    col: usize,
    pending_wrap: bool,
}

impl Screen {
    /// An empty screen `width` columns wide.
    pub fn new(width: usize) -> Self {
        Self {
            width,
            rows: vec![Vec::new()],
            row: 0,
            col: 0,
            pending_wrap: false,
        }
    }

    fn newline(&mut self) {
        self.row += 1;
        if self.row == self.rows.len() {
            self.rows.push(Vec::new());
        }
        self.col = 0;
        self.pending_wrap = false;
    }

    /// Applies `text` as a terminal would. Panics on an escape sequence it does not know.
    pub fn feed(&mut self, text: &str) {
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\n' => self.newline(),
                '\r' => {
                    self.col = 0;
                    self.pending_wrap = false;
                }
                '\x1b' => {
                    assert_eq!(chars.next(), Some('['), "only CSI sequences");
                    let mut arg = String::new();
                    let mut cmd = ' ';
                    for c in chars.by_ref() {
                        if c.is_ascii_digit() || c == ';' || c == '?' {
                            arg.push(c);
                        } else {
                            cmd = c;
                            break;
                        }
                    }
                    let n: usize = arg.parse().unwrap_or(1);
                    self.pending_wrap = false;
                    match cmd {
                        'A' => self.row = self.row.saturating_sub(n),
                        'F' => {
                            self.row = self.row.saturating_sub(n);
                            self.col = 0;
                        }
                        'K' if arg == "2" => self.rows[self.row].clear(),
                        'K' => self.rows[self.row].truncate(self.col),
                        'J' => {
                            self.rows[self.row].truncate(self.col);
                            self.rows.truncate(self.row + 1);
                        }
                        'm' => {}
                        other => panic!("unexpected escape sequence {arg}{other}"),
                    }
                }
                c => {
                    if self.pending_wrap {
                        self.newline();
                    }
                    let line = &mut self.rows[self.row];
                    while line.len() < self.col {
                        line.push(' ');
                    }
                    if self.col < line.len() {
                        line[self.col] = c;
                    } else {
                        line.push(c);
                    }
                    self.col += 1;
                    if self.col == self.width {
                        self.col = self.width - 1;
                        self.pending_wrap = true;
                    }
                }
            }
        }
    }

    /// The rows shown, without trailing blanks (trailing empty rows dropped).
    pub fn text(&self) -> Vec<String> {
        let mut rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| r.iter().collect::<String>().trim_end().to_owned())
            .collect();
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        rows
    }
}
