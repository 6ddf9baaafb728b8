//! Output negotiation (upstream's `negotiation.NegotiateOutputMediaType`): which media type
//! and which view a response takes, from the `Accept` header.
//!
//! Clauses are ordered as `goautoneg.ParseAccept` orders them (higher `q` first, then
//! concrete types before wildcards, otherwise as written), and the first clause some supported
//! media type (`application/json`, `application/yaml`, `application/vnd.kubernetes.protobuf`,
//! in that order, so `*/*` is JSON) accepts wins. A clause's `as`/`g`/`v` parameters ask for a
//! `Table` (JSON or YAML only) or `PartialObjectMetadata[List]` (any type); `stream` must be
//! `watch` and needs a streaming type (not YAML). Protobuf is offered for the objects
//! themselves only when they are built-in kinds the descriptor table knows; custom resources
//! are refused it as upstream's CRD handler refuses it (its standard serializers exclude
//! protobuf), falling through to later clauses. Nothing acceptable: 406 `NotAcceptable`.
//!
//! YAML is written as upstream's serializer writes it: the JSON form turned into YAML, map
//! keys sorted.

use http::{HeaderMap, Response, StatusCode, header};
use serde_json::Value;

use super::body::{self, Body};
use super::table::IncludeObject;
use super::view::View;
use crate::error::ApiError;

/// The media type of JSON.
const JSON: &str = "application/json";
/// The media type of YAML.
const YAML: &str = "application/yaml";

/// The wire form of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON.
    Json,
    /// `application/yaml` (never for watches).
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// What a response to a read or write looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// The wire form.
    pub format: Format,
    /// Objects, a Table or metadata only.
    pub view: View,
}

impl Output {
    /// Plain JSON objects, what a request without `Accept` gets.
    pub const JSON: Output = Output {
        format: Format::Json,
        view: View::Object,
    };

    /// A response carrying `value` (an object with `apiVersion` and `kind`). A value the
    /// protobuf encoder cannot write (a bug, or a kind without a descriptor) is answered as
    /// JSON, which client-go decodes by its `Content-Type`.
    pub fn respond(&self, status: StatusCode, value: &Value) -> Response<Body> {
        if self.format == Format::Protobuf {
            match crate::protobuf::encode_object(value) {
                Ok(bytes) => {
                    return body::bytes_response(status, bytes, crate::protobuf::CONTENT_TYPE);
                }
                Err(e) => {
                    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
                    tracing::warn!(error = %e, kind, "answering JSON: protobuf encoding failed");
                }
            }
        }
        match self.format {
            Format::Yaml => body::yaml_response(status, value),
            _ => body::json_response(status, value),
        }
    }
}

/// One media range of an `Accept` header.
#[derive(Debug, Clone, PartialEq)]
struct Clause {
    /// The type (`application`, `*`).
    ty: String,
    /// The subtype (`json`, `*`).
    sub: String,
    /// The `q` weight.
    q: f64,
    /// Other parameters, in order.
    params: Vec<(String, String)>,
}

impl Clause {
    /// The value of parameter `name`.
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// goautoneg's ordering: `a` goes before `b`.
fn before(a: &Clause, b: &Clause) -> bool {
    a.q > b.q || (a.ty != "*" && b.ty == "*") || (a.sub != "*" && b.sub == "*")
}

/// Parses an `Accept` header as `goautoneg.ParseAccept` does, ordered for negotiation.
fn parse_accept(header: &str) -> Vec<Clause> {
    let mut clauses: Vec<Clause> = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.trim_matches(' ').split(';');
        let range = pieces.next().unwrap_or("");
        let halves: Vec<&str> = range.split('/').collect();
        let ty = halves
            .first()
            .map_or("", |t| t.trim_matches(' '))
            .to_owned();
        let sub = match halves.as_slice() {
            [_] if ty == "*" => "*".to_owned(),
            [_, sub] => sub.trim_matches(' ').to_owned(),
            _ => continue,
        };
        let mut clause = Clause {
            ty,
            sub,
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let key = key.trim_matches(' ');
            if key == "q" {
                // Go's ParseFloat error leaves 0.
                clause.q = value.parse::<f32>().map_or(0.0, f64::from);
            } else {
                clause
                    .params
                    .push((key.to_owned(), value.trim_matches(' ').to_owned()));
            }
        }
        clauses.push(clause);
    }
    // Go's sort of a short slice is an insertion sort; its order for equal clauses is kept.
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && before(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
    clauses
}

/// What a request's responses may be.
#[derive(Debug, Clone, Copy)]
pub struct Offer {
    /// Whether the objects themselves may be protobuf (a built-in kind with a descriptor).
    pub protobuf_objects: bool,
    /// Whether the response is a watch stream.
    pub stream: bool,
    /// Whether `Table` may be asked for (reads of a resource).
    pub tables: bool,
}

/// The `View` a clause's `as`/`g`/`v` ask for, `None` when the server cannot convert to it
/// in `media` (upstream's `AllowsMediaTypeTransform`).
fn view_of(clause: &Clause, media: &str, offer: Offer, include: Option<&str>) -> Option<View> {
    let kind = clause.param("as");
    let group = clause.param("g");
    let version = clause.param("v");
    if kind.is_none() && group.is_none() && version.is_none() {
        return (media != crate::protobuf::CONTENT_TYPE || offer.protobuf_objects)
            .then_some(View::Object);
    }
    // Upstream needs `v` (v1 or v1beta1); korral also takes it absent, as it always has.
    if group != Some("meta.k8s.io") || !matches!(version, None | Some("v1" | "v1beta1")) {
        return None;
    }
    match kind? {
        "Table" if offer.tables && media != crate::protobuf::CONTENT_TYPE => {
            Some(View::Table(IncludeObject::parse(include)))
        }
        "PartialObjectMetadata" | "PartialObjectMetadataList" => Some(View::Metadata),
        _ => None,
    }
}

/// The error when nothing in `Accept` is acceptable.
fn not_acceptable(stream: bool) -> ApiError {
    let supported = if stream {
        format!(
            "{JSON};stream=watch, {};stream=watch",
            crate::protobuf::CONTENT_TYPE
        )
    } else {
        format!("{JSON}, {YAML}, {}", crate::protobuf::CONTENT_TYPE)
    };
    ApiError::new(
        406,
        "NotAcceptable",
        format!("only the following media types are accepted: {supported}"),
    )
}

/// Negotiates the output of a request from its `Accept` values; `include` is the
/// `includeObject` query parameter of Tables.
pub fn negotiate<'a>(
    accept: impl IntoIterator<Item = &'a str>,
    offer: Offer,
    include: Option<&str>,
) -> Result<Output, ApiError> {
    let header = accept.into_iter().collect::<Vec<_>>().join(",");
    if header.trim().is_empty() {
        return Ok(Output::JSON);
    }
    for clause in parse_accept(&header) {
        for (ty, sub, media) in [
            ("application", "json", JSON),
            ("application", "yaml", YAML),
            (
                "application",
                "vnd.kubernetes.protobuf",
                crate::protobuf::CONTENT_TYPE,
            ),
        ] {
            let matches = (clause.ty == ty && (clause.sub == sub || clause.sub == "*"))
                || (clause.ty == "*" && clause.sub == "*");
            if !matches {
                continue;
            }
            if let Some(stream) = clause.param("stream")
                && !stream.is_empty()
                && (stream != "watch" || media == YAML)
            {
                continue;
            }
            let Some(view) = view_of(&clause, media, offer, include) else {
                continue;
            };
            if offer.stream && media == YAML {
                // The first acceptable type has no streaming form.
                return Err(not_acceptable(true));
            }
            let format = match media {
                YAML => Format::Yaml,
                JSON => Format::Json,
                _ => Format::Protobuf,
            };
            return Ok(Output { format, view });
        }
    }
    Err(not_acceptable(offer.stream))
}

/// [`negotiate`] over a request's `Accept` headers.
pub fn from_headers(
    headers: &HeaderMap,
    offer: Offer,
    include: Option<&str>,
) -> Result<Output, ApiError> {
    negotiate(
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok()),
        offer,
        include,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An offer of a built-in kind's reads.
    const BUILTIN: Offer = Offer {
        protobuf_objects: true,
        stream: false,
        tables: true,
    };
    /// An offer of a custom resource's reads.
    const CUSTOM: Offer = Offer {
        protobuf_objects: false,
        stream: false,
        tables: true,
    };

    fn out(accept: &str, offer: Offer) -> Result<Output, u16> {
        negotiate([accept], offer, None).map_err(|e| e.code)
    }

    fn proto(view: View) -> Result<Output, u16> {
        Ok(Output {
            format: Format::Protobuf,
            view,
        })
    }

    fn json(view: View) -> Result<Output, u16> {
        Ok(Output {
            format: Format::Json,
            view,
        })
    }

    #[test]
    fn accept_headers_are_ordered_as_goautoneg_orders_them() {
        let c = parse_accept("text/*;q=0.3, text/html;q=0.7, text/html;level=1, */*;q=0.5, x");
        let order: Vec<String> = c
            .iter()
            .map(|c| format!("{}/{} {:.1}", c.ty, c.sub, c.q))
            .collect();
        assert_eq!(
            order,
            ["text/html 1.0", "text/html 0.7", "*/* 0.5", "text/* 0.3"]
        );
        assert_eq!(c[0].param("level"), Some("1"));
        assert_eq!(parse_accept("*")[0].sub, "*");
    }

    #[test]
    fn builtin_kinds_answer_protobuf_when_it_is_preferred() {
        let object = View::Object;
        assert_eq!(out("", BUILTIN), json(object));
        assert_eq!(
            out(
                "application/vnd.kubernetes.protobuf, application/json",
                BUILTIN
            ),
            proto(object)
        );
        assert_eq!(
            out("application/vnd.kubernetes.protobuf", BUILTIN),
            proto(object)
        );
        assert_eq!(
            out(
                "application/json, application/vnd.kubernetes.protobuf",
                BUILTIN
            ),
            json(object)
        );
        assert_eq!(
            out(
                "application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9",
                BUILTIN
            ),
            proto(object)
        );
        assert_eq!(out("*/*", BUILTIN), json(object));
        assert_eq!(out("application/*", BUILTIN), json(object));
        assert_eq!(
            out("application/yaml", BUILTIN),
            Ok(Output {
                format: Format::Yaml,
                view: object
            })
        );
        assert_eq!(out("text/html, */*;q=0.8", BUILTIN), json(object));
        assert_eq!(out("text/html", BUILTIN), Err(406));
        let err = negotiate(["application/xml"], BUILTIN, None).expect_err("406");
        assert_eq!(err.reason, "NotAcceptable");
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn custom_resources_never_answer_protobuf_objects() {
        assert_eq!(
            out(
                "application/vnd.kubernetes.protobuf, application/json",
                CUSTOM
            ),
            json(View::Object)
        );
        assert_eq!(out("application/vnd.kubernetes.protobuf", CUSTOM), Err(406));
        // Their metadata may be protobuf, as upstream's PartialObjectMetadata conversion.
        let meta = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(out(meta, CUSTOM), proto(View::Metadata));
    }

    #[test]
    fn tables_and_metadata_views() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(
            out(table, BUILTIN),
            json(View::Table(IncludeObject::Metadata))
        );
        // A protobuf Table is not served: the next clause wins.
        let table_pb =
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json";
        assert_eq!(out(table_pb, BUILTIN), json(View::Object));
        let meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(out(meta, BUILTIN), json(View::Metadata));
        // Another group's kind of the same name is not ours.
        let other = "application/json;as=PartialObjectMetadata;g=example.com;v=v1";
        assert_eq!(out(other, BUILTIN), Err(406));
        let no_tables = Offer {
            tables: false,
            ..BUILTIN
        };
        assert_eq!(out(table, no_tables), json(View::Object));
    }

    #[test]
    fn watch_streams() {
        let watch = Offer {
            stream: true,
            ..BUILTIN
        };
        assert_eq!(
            out("application/vnd.kubernetes.protobuf;stream=watch", watch),
            proto(View::Object)
        );
        assert_eq!(
            out("application/json;stream=watch", watch),
            json(View::Object)
        );
        assert_eq!(out("application/json;stream=other", watch), Err(406));
        let err = negotiate(["application/yaml"], watch, None).expect_err("yaml watch");
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
    }
}
