//! List responses written as a stream of chunks: the envelope (`kind`, `apiVersion`, `metadata`,
//! …) and then the items serialized one by one into ~64 KiB chunks, so a large list never exists
//! twice in memory (the stored objects are shared; only the chunk being filled is new).
//!
//! The bytes are exactly those `serde_json` writes for the whole list: the envelope's fields in
//! their given order, the array in place of its slot.

use std::borrow::Borrow;
use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{Map, Value};

use super::body::{self, Body};
use super::negotiate::Format;
use crate::error::ApiError;

/// Size a chunk grows to before it is handed to the connection (an item is never split, so a
/// chunk may exceed it by one item).
pub const CHUNK: usize = 64 * 1024;

/// The fields of a list object around its array, in output order.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// `(name, value)`; `None` marks the array written from the items.
    fields: Vec<(String, Option<Value>)>,
}

impl Envelope {
    /// Fields in this order; `array` names the one the items fill.
    pub fn ordered<'a>(fields: impl IntoIterator<Item = (&'a str, Value)>, array: &str) -> Self {
        let mut fields: Vec<(String, Option<Value>)> = fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), Some(v)))
            .collect();
        fields.push((array.to_string(), None));
        Self { fields }
    }

    /// The fields of `map` in the order `serde_json` writes them; the value under `array` (a
    /// placeholder, usually `[]`) is replaced by the items, and added last when absent.
    pub fn from_map(map: Map<String, Value>, array: &str) -> Self {
        let mut found = false;
        let mut fields: Vec<(String, Option<Value>)> = map
            .into_iter()
            .map(|(k, v)| {
                if k == array {
                    found = true;
                    (k, None)
                } else {
                    (k, Some(v))
                }
            })
            .collect();
        if !found {
            fields.push((array.to_string(), None));
        }
        Self { fields }
    }

    /// The bytes before the first item (through `"<array>":[`) and after the last one.
    fn head_and_tail(&self) -> serde_json::Result<(Vec<u8>, Vec<u8>)> {
        let mut head = vec![b'{'];
        let mut tail = vec![b']'];
        let mut before = true;
        for (i, (name, value)) in self.fields.iter().enumerate() {
            let out = if before { &mut head } else { &mut tail };
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, name)?;
            out.push(b':');
            match value {
                Some(v) => serde_json::to_writer(&mut *out, v)?,
                None if before => {
                    out.push(b'[');
                    before = false;
                }
                // A second array slot cannot be built through the constructors.
                None => out.extend_from_slice(b"[]"),
            }
        }
        tail.push(b'}');
        Ok((head, tail))
    }
}

/// The chunks of one list: an iterator of byte chunks, each at least [`CHUNK`] long except the
/// last, whose concatenation is the list's JSON.
pub struct Chunks<I> {
    /// Bytes written but not yet handed out (the head at first).
    buf: Vec<u8>,
    /// The items left.
    items: I,
    /// Whether an item has been written (a comma goes before the next).
    wrote_item: bool,
    /// The bytes after the array, taken when the items run out.
    tail: Option<Vec<u8>>,
    /// Whether the last chunk (or an error) has been handed out.
    done: bool,
}

impl<I> Chunks<I>
where
    I: Iterator,
    I::Item: Borrow<Value>,
{
    /// Starts the chunks of the list `envelope` with `items` in its array.
    pub fn new(envelope: &Envelope, items: I) -> serde_json::Result<Self> {
        let (head, tail) = envelope.head_and_tail()?;
        let mut buf = Vec::with_capacity(CHUNK + CHUNK / 4);
        buf.extend_from_slice(&head);
        Ok(Self {
            buf,
            items,
            wrote_item: false,
            tail: Some(tail),
            done: false,
        })
    }
}

impl<I> Iterator for Chunks<I>
where
    I: Iterator,
    I::Item: Borrow<Value>,
{
    type Item = serde_json::Result<Bytes>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        while self.buf.len() < CHUNK {
            match self.items.next() {
                Some(item) => {
                    if self.wrote_item {
                        self.buf.push(b',');
                    }
                    self.wrote_item = true;
                    if let Err(e) = serde_json::to_writer(&mut self.buf, item.borrow()) {
                        // Nothing follows a failed item: the list is not what it claims to be.
                        self.buf = Vec::new();
                        self.tail = None;
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                None => match self.tail.take() {
                    Some(tail) => {
                        self.buf.extend_from_slice(&tail);
                        break;
                    }
                    None => break,
                },
            }
        }
        if self.tail.is_none() {
            // The last chunk: no buffer kept for more.
            self.done = true;
            return Some(Ok(Bytes::from(std::mem::take(&mut self.buf))));
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK + CHUNK / 4));
        Some(Ok(Bytes::from(chunk)))
    }
}

/// A `200 OK` response of the list `envelope` with `items` in `format`: JSON streamed (see
/// [`response`]), YAML written whole (a YAML list is assembled, then converted).
pub fn respond_as<I>(format: Format, envelope: &Envelope, items: I) -> Response<Body>
where
    I: Iterator + Send + Sync + 'static,
    I::Item: Borrow<Value>,
{
    if format != Format::Yaml {
        return response(envelope, items);
    }
    let mut items = Some(items);
    let list: Map<String, Value> = envelope
        .fields
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Some(v) => v.clone(),
                None => Value::Array(
                    items
                        .take()
                        .into_iter()
                        .flatten()
                        .map(|i| i.borrow().clone())
                        .collect(),
                ),
            };
            (name.clone(), value)
        })
        .collect();
    body::yaml_response(StatusCode::OK, &Value::Object(list))
}

/// A `200 OK` JSON response of the list `envelope` with `items`, streamed chunk by chunk. A list
/// that fits in one chunk is sent whole (with its `Content-Length`); a longer one is sent as
/// its chunks are written, which the connection pulls only as fast as the client reads.
pub fn response<I>(envelope: &Envelope, items: I) -> Response<Body>
where
    I: Iterator + Send + Sync + 'static,
    I::Item: Borrow<Value>,
{
    let mut chunks = match Chunks::new(envelope, items) {
        Ok(chunks) => chunks,
        Err(e) => return encoding_error(&e),
    };
    let first = match chunks.next() {
        Some(Ok(first)) => first,
        Some(Err(e)) => return encoding_error(&e),
        None => Bytes::new(),
    };
    let body: Body = if chunks.done {
        body::full(first)
    } else {
        // Past the first chunk the status is sent: an item that cannot be encoded (a `Value`
        // always can) ends the body early, and the client sees a truncated list, never a
        // different one.
        let rest = chunks.map_while(|chunk| match chunk {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                tracing::error!(error = %e, "encoding a list item; the response ends early");
                None
            }
        });
        let frames = std::iter::once(first)
            .chain(rest)
            .map(|bytes| Ok::<_, Infallible>(Frame::data(bytes)));
        StreamBody::new(futures::stream::iter(frames)).boxed()
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The 500 answer of a list whose envelope could not be encoded.
fn encoding_error(e: &serde_json::Error) -> Response<Body> {
    body::error_response(&ApiError::internal(format!("encoding list: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;

    /// The whole list as one `serde_json` value, fields in the envelope's order.
    #[derive(Serialize)]
    struct WholeList<'a> {
        kind: &'a str,
        #[serde(rename = "apiVersion")]
        api_version: &'a str,
        metadata: Value,
        items: &'a [Value],
    }

    fn configmaps(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| {
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i:05}"), "namespace": "default",
                        "resourceVersion": (i + 10).to_string(),
                        "labels": {"index": i.to_string(), "quote": "a\"b\\c\u{1}é"}},
                    "data": {"payload": "x".repeat(i % 700), "n": i.to_string()}})
            })
            .collect()
    }

    fn streamed<I>(envelope: &Envelope, items: I) -> (Vec<u8>, Vec<usize>)
    where
        I: Iterator,
        I::Item: Borrow<Value>,
    {
        let mut out = Vec::new();
        let mut sizes = Vec::new();
        for chunk in Chunks::new(envelope, items).expect("head") {
            let chunk = chunk.expect("chunk");
            sizes.push(chunk.len());
            out.extend_from_slice(&chunk);
        }
        (out, sizes)
    }

    #[test]
    fn streamed_lists_are_byte_identical_to_serde_json_of_the_whole_list() {
        for n in [0, 1, 2, 37, 500, 3000] {
            let items = configmaps(n);
            let metadata = json!({"resourceVersion": "42", "continue": "tok\"en",
                "remainingItemCount": 7});
            let whole = serde_json::to_vec(&WholeList {
                kind: "ConfigMapList",
                api_version: "v1",
                metadata: metadata.clone(),
                items: &items,
            })
            .expect("whole");
            let envelope = Envelope::ordered(
                [
                    ("kind", json!("ConfigMapList")),
                    ("apiVersion", json!("v1")),
                    ("metadata", metadata),
                ],
                "items",
            );
            let (bytes, sizes) = streamed(&envelope, items.iter());
            assert_eq!(
                String::from_utf8(bytes).expect("utf8"),
                String::from_utf8(whole).expect("utf8"),
                "{n} items"
            );
            // Every chunk but the last is full, and none holds more than a chunk and one item.
            let largest_item = items
                .iter()
                .map(|i| serde_json::to_vec(i).expect("item").len())
                .max()
                .unwrap_or(0);
            for (i, size) in sizes.iter().enumerate() {
                assert!(*size <= CHUNK + largest_item + 1, "chunk {i}: {size}");
                if i + 1 < sizes.len() {
                    assert!(*size >= CHUNK, "chunk {i} of {}: {size}", sizes.len());
                }
            }
            if n == 3000 {
                assert!(sizes.len() > 10, "{sizes:?}");
            }
        }
    }

    #[test]
    fn a_map_envelope_keeps_the_maps_own_field_order() {
        // Whatever order serde_json's Map keeps (sorted, or insertion with preserve_order),
        // the streamed bytes are those of the map with its array filled.
        let items = configmaps(300);
        let map = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "9"}, "rows": [], "columnDefinitions": [{"name": "Name"}]});
        let Value::Object(map) = map else {
            unreachable!()
        };
        let mut whole = map.clone();
        whole.insert("rows".into(), Value::Array(items.clone()));
        let expected = serde_json::to_vec(&Value::Object(whole)).expect("whole");
        let (bytes, _) = streamed(&Envelope::from_map(map, "rows"), items.into_iter());
        assert_eq!(bytes, expected);
    }

    #[test]
    fn a_missing_array_slot_is_added_last() {
        let envelope = Envelope::from_map(Map::new(), "items");
        let (bytes, sizes) = streamed(&envelope, [json!(1), json!(2), json!(3)].into_iter());
        assert_eq!(bytes, br#"{"items":[1,2,3]}"#);
        assert_eq!(sizes.len(), 1);
    }

    #[tokio::test]
    async fn small_lists_keep_their_length_and_large_ones_stream() {
        let envelope = Envelope::ordered([("kind", json!("ConfigMapList"))], "items");
        let small = response(&envelope, configmaps(3).into_iter());
        assert_eq!(
            http_body::Body::size_hint(small.body()).exact(),
            Some(
                serde_json::to_vec(&json!({"kind": "ConfigMapList", "items": configmaps(3)}))
                    .expect("small")
                    .len() as u64
            )
        );
        let items = configmaps(2000);
        let expected = serde_json::to_vec(&WholeList {
            kind: "ConfigMapList",
            api_version: "v1",
            metadata: json!({}),
            items: &items,
        })
        .expect("whole");
        let envelope = Envelope::ordered(
            [
                ("kind", json!("ConfigMapList")),
                ("apiVersion", json!("v1")),
                ("metadata", json!({})),
            ],
            "items",
        );
        let large = response(&envelope, items.into_iter());
        assert_eq!(large.status(), StatusCode::OK);
        assert_eq!(http_body::Body::size_hint(large.body()).exact(), None);
        let bytes = large.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(bytes.as_ref(), expected.as_slice());
    }
}
