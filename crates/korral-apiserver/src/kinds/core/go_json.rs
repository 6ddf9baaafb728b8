//! The syntax errors of Go's `encoding/json` scanner, which upstream quotes when a Secret's
//! docker config is not JSON (`invalid character 'n' looking for beginning of object key
//! string`, `unexpected end of JSON input`).

/// Checks that `input` is one JSON value; on failure, Go's error message.
pub(super) fn check(input: &[u8]) -> Result<(), String> {
    let mut p = Parser { s: input, i: 0 };
    p.ws();
    p.value()?;
    p.ws();
    match p.peek() {
        None => Ok(()),
        Some(c) => Err(format!(
            "invalid character {} after top-level value",
            quote(c)
        )),
    }
}

/// Go's `quoteChar`: `'x'`, with `'\''` and `'"'` spelled out and controls escaped.
fn quote(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        b'\n' => "'\\n'".to_string(),
        b'\t' => "'\\t'".to_string(),
        b'\r' => "'\\r'".to_string(),
        c if c < 0x20 || c == 0x7f => format!("'\\x{c:02x}'"),
        c if c >= 0x80 => "'\\ufffd'".to_string(),
        c => format!("'{}'", c as char),
    }
}

/// A recursive-descent scanner over the bytes of the input.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

/// Go's message at the end of the input.
const EOF: &str = "unexpected end of JSON input";

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn err(&self, c: u8, context: &str) -> String {
        format!("invalid character {} {context}", quote(c))
    }

    fn value(&mut self) -> Result<(), String> {
        match self.peek() {
            None => Err(EOF.to_string()),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(c) => Err(self.err(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Result<(), String> {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(b'"') => self.string()?,
                Some(c) => return Err(self.err(c, "looking for beginning of object key string")),
            }
            self.ws();
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(b':') => self.i += 1,
                Some(c) => return Err(self.err(c, "after object key")),
            }
            self.ws();
            self.value()?;
            self.ws();
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(c) => return Err(self.err(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Result<(), String> {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.ws();
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(c) => return Err(self.err(c, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Result<(), String> {
        self.i += 1;
        loop {
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        None => return Err(EOF.to_string()),
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.i += 1;
                        }
                        Some(b'u') => {
                            self.i += 1;
                            for _ in 0..4 {
                                match self.peek() {
                                    None => return Err(EOF.to_string()),
                                    Some(c) if c.is_ascii_hexdigit() => self.i += 1,
                                    Some(c) => {
                                        return Err(
                                            self.err(c, "in \\u hexadecimal character escape")
                                        );
                                    }
                                }
                            }
                        }
                        Some(c) => return Err(self.err(c, "in string escape code")),
                    }
                }
                Some(c) if c < 0x20 => return Err(self.err(c, "in string literal")),
                Some(_) => self.i += 1,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), String> {
        let name = String::from_utf8_lossy(word).into_owned();
        for (k, want) in word.iter().enumerate() {
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(c) if c == *want => self.i += 1,
                Some(c) => {
                    return Err(self.err(
                        c,
                        &format!("in literal {name} (expecting {})", quote(word[k])),
                    ));
                }
            }
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            None => return Err(EOF.to_string()),
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            Some(c) => return Err(self.err(c, "in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(b'0'..=b'9') => self.digits(),
                Some(c) => return Err(self.err(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            match self.peek() {
                None => return Err(EOF.to_string()),
                Some(b'0'..=b'9') => self.digits(),
                Some(c) => return Err(self.err(c, "in exponent of numeric literal")),
            }
        }
        Ok(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn go_messages() {
        assert!(check(br#"{"auths": {"r": {"auth": "x"}}, "n": [1, -2.5e3, true, null]}"#).is_ok());
        let cases: [(&[u8], &str); 7] = [
            (
                b"{not json}",
                "invalid character 'n' looking for beginning of object key string",
            ),
            (b"", "unexpected end of JSON input"),
            (b"{\"a\": 1", "unexpected end of JSON input"),
            (b"{\"a\" 1}", "invalid character '1' after object key"),
            (b"[1 2]", "invalid character '2' after array element"),
            (b"{} x", "invalid character 'x' after top-level value"),
            (
                b"tru!",
                "invalid character '!' in literal true (expecting 'e')",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(check(input).expect_err("refused"), want);
        }
    }
}
