//! Raw HTTP/1.1 replies for tests that write requests byte by byte (malformed heads, held
//! bodies): read until the server closes the connection, status code, lower-cased head and
//! de-chunked body.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// A raw HTTP/1.1 reply: the status code, the headers (lower-cased) and the body.
pub struct Reply {
    /// The status code.
    pub code: u16,
    /// The status line and headers, lower-cased.
    pub head: String,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON (`null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The value of response header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
    }
}

/// Reads `stream` until the server closes it (at most `limit`) and splits the reply.
pub async fn read_reply(mut stream: TcpStream, limit: Duration) -> Reply {
    let mut out = Vec::new();
    let read = tokio::time::timeout(limit, stream.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "no reply within {limit:?}");
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, _) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let head_len = head.len() + 4;
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let head = head.to_ascii_lowercase();
    let mut body = out.get(head_len..).unwrap_or_default().to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    Reply { code, head, body }
}

/// The payload of a chunked body.
pub fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(pos) = data.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..pos]).unwrap_or("0").trim(), 16)
                .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = pos + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = data.get(start + size + 2..).unwrap_or_default();
    }
    out
}
