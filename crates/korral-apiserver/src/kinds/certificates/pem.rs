//! The PEM and X.509 checks of CertificateSigningRequests, with the messages of upstream's
//! `ParseCSR`, `CheckSignature` and `validateCertificate` (Go's `encoding/pem` and
//! `crypto/x509`).

use std::collections::BTreeMap;

use base64::Engine;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::{FromDer, X509Certificate, X509Error};

/// One PEM block as Go's `pem.Decode` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Block {
    /// The type in `-----BEGIN <type>-----`.
    pub kind: String,
    /// `Key: value` headers before the data.
    pub headers: BTreeMap<String, String>,
    /// The decoded data.
    pub bytes: Vec<u8>,
}

const BEGIN: &[u8] = b"\n-----BEGIN ";
const END: &[u8] = b"\n-----END ";
const DASHES: &[u8] = b"-----";

/// The first line of `data` without its `\n` or `\r\n` and trailing spaces and tabs, and what
/// follows it (Go's `getLine`).
fn get_line(data: &[u8]) -> (&[u8], &[u8]) {
    let (line, rest) = match data.iter().position(|b| *b == b'\n') {
        None => (data, &data[data.len()..]),
        Some(i) => {
            let end = if i > 0 && data[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            (&data[..end], &data[i + 1..])
        }
    };
    let trimmed = line
        .iter()
        .rposition(|b| *b != b' ' && *b != b'\t')
        .map_or(&line[..0], |last| &line[..=last]);
    (trimmed, rest)
}

/// The position of `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Go's `pem.Decode`: the first well-formed block of `data` and the bytes after it, or `None`
/// when there is none (blocks that fail to parse are skipped, as Go skips them).
pub(super) fn decode(data: &[u8]) -> Option<(Block, &[u8])> {
    let mut rest = data;
    loop {
        if rest.starts_with(&BEGIN[1..]) {
            rest = &rest[BEGIN.len() - 1..];
        } else {
            let at = find(rest, BEGIN)?;
            rest = &rest[at + BEGIN.len()..];
        }
        let (type_line, after) = get_line(rest);
        rest = after;
        let Some(kind) = type_line.strip_suffix(DASHES) else {
            continue;
        };
        let mut headers = BTreeMap::new();
        loop {
            if rest.is_empty() {
                return None;
            }
            let (line, next) = get_line(rest);
            let Some(colon) = line.iter().position(|b| *b == b':') else {
                break;
            };
            let key = String::from_utf8_lossy(line[..colon].trim_ascii()).into_owned();
            let value = String::from_utf8_lossy(line[colon + 1..].trim_ascii()).into_owned();
            headers.insert(key, value);
            rest = next;
        }
        let (end_index, trailer_index) = if headers.is_empty() && rest.starts_with(&END[1..]) {
            (0, END.len() - 1)
        } else {
            match find(rest, END) {
                Some(i) => (i, i + END.len()),
                None => continue,
            }
        };
        let trailer = &rest[trailer_index..];
        let trailer_len = kind.len() + DASHES.len();
        if trailer.len() < trailer_len {
            continue;
        }
        let (end_line, rest_of_line) = trailer.split_at(trailer_len);
        if !end_line.starts_with(kind) || !end_line.ends_with(DASHES) {
            continue;
        }
        if !get_line(rest_of_line).0.is_empty() {
            continue;
        }
        let encoded: Vec<u8> = rest[..end_index]
            .iter()
            .copied()
            .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .collect();
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&encoded) else {
            continue;
        };
        let (_, after_block) = get_line(&rest[end_index + END.len() - 1..]);
        let block = Block {
            kind: String::from_utf8_lossy(kind).into_owned(),
            headers,
            bytes,
        };
        return Some((block, after_block));
    }
}

/// Object identifiers of the public key algorithms Go's `CheckSignature` names in its errors.
const RSA: &str = "1.2.840.113549.1.1.1";
const ECDSA: &str = "1.2.840.10045.2.1";
const ED25519: &str = "1.3.101.112";

/// Upstream's `validateCSR`: `request` holds a PEM `CERTIFICATE REQUEST` block whose PKCS#10
/// request parses and carries a valid self-signature. The error is Go's message.
pub(super) fn check_request(request: &[u8]) -> Result<(), String> {
    let block = match decode(request) {
        Some((block, _)) if block.kind == "CERTIFICATE REQUEST" => block,
        _ => return Err("PEM block type must be CERTIFICATE REQUEST".to_string()),
    };
    let (rest, csr) = X509CertificationRequest::from_der(&block.bytes)
        .map_err(|_| "asn1: structure error: malformed certificate request".to_string())?;
    if !rest.is_empty() {
        return Err("asn1: syntax error: trailing data".to_string());
    }
    csr.verify_signature().map_err(|e| match e {
        X509Error::SignatureUnsupportedAlgorithm => {
            "x509: cannot verify signature: algorithm unimplemented".to_string()
        }
        _ => {
            let algorithm = csr
                .certification_request_info
                .subject_pki
                .algorithm
                .algorithm
                .to_id_string();
            match algorithm.as_str() {
                RSA => "crypto/rsa: verification error".to_string(),
                ECDSA => "x509: ECDSA verification failure".to_string(),
                ED25519 => "x509: Ed25519 verification failure".to_string(),
                _ => "x509: cannot verify signature: algorithm unimplemented".to_string(),
            }
        }
    })
}

/// The organizations (`O`) of a certificate request's subject (DER), as upstream's `ParseCSR`
/// reads them; the error is Go's message when the request does not parse.
pub(super) fn subject_organizations(request: &[u8]) -> Result<Vec<String>, String> {
    let (_, csr) = X509CertificationRequest::from_der(request)
        .map_err(|_| "asn1: structure error: malformed certificate request".to_string())?;
    Ok(csr
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect())
}

/// Upstream's `validateCertificate` of `status.certificate`: empty, or only `CERTIFICATE`
/// blocks without headers, each holding parsable certificates, at least one block.
pub(super) fn check_certificates(pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let mut rest = pem;
    let mut blocks = 0;
    while let Some((block, after)) = decode(rest) {
        if block.kind != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                crate::validation::names::go_quote(&block.kind)
            ));
        }
        if !block.headers.is_empty() {
            return Err("no PEM block headers are permitted".to_string());
        }
        blocks += 1;
        let mut der = block.bytes.as_slice();
        let mut certificates = 0;
        while !der.is_empty() {
            let (next, _) = X509Certificate::from_der(der)
                .map_err(|_| "x509: malformed certificate".to_string())?;
            der = next;
            certificates += 1;
        }
        if certificates == 0 {
            return Err("found CERTIFICATE PEM block containing 0 certificates".to_string());
        }
        rest = after;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".to_string());
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A fresh key's certificate signing request, PEM encoded.
    pub(crate) fn csr_pem() -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["example.com".to_string()]).expect("p");
        params
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem")
    }

    /// A self-signed certificate, PEM encoded.
    pub(crate) fn certificate_pem() -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["example.com".to_string()]).expect("p");
        params.self_signed(&key).expect("cert").pem()
    }

    #[test]
    fn decodes_like_go() {
        let text = "junk\n-----BEGIN THING-----\nA: b\n\naGVsbG8=\n-----END THING-----\nmore";
        let (block, rest) = decode(text.as_bytes()).expect("block");
        assert_eq!(block.kind, "THING");
        assert_eq!(block.headers.get("A").map(String::as_str), Some("b"));
        assert_eq!(block.bytes, b"hello");
        assert_eq!(rest, b"more");
        // A mismatched end line is skipped; no block remains.
        assert!(decode(b"-----BEGIN A-----\naGk=\n-----END B-----\n").is_none());
        assert!(decode(b"no pem here").is_none());
        let (empty, _) = decode(b"-----BEGIN E-----\n-----END E-----\n").expect("empty");
        assert!(empty.bytes.is_empty());
    }

    #[test]
    fn requests_must_be_signed_csrs() {
        let pem = csr_pem();
        assert_eq!(check_request(pem.as_bytes()), Ok(()));
        assert_eq!(
            check_request(certificate_pem().as_bytes()),
            Err("PEM block type must be CERTIFICATE REQUEST".to_string())
        );
        assert_eq!(
            check_request(b"hello"),
            Err("PEM block type must be CERTIFICATE REQUEST".to_string())
        );
        let garbage =
            "-----BEGIN CERTIFICATE REQUEST-----\naGVsbG8=\n-----END CERTIFICATE REQUEST-----\n";
        assert!(check_request(garbage.as_bytes()).is_err());
        // A flipped bit in the signature: the ECDSA signature no longer verifies.
        let (block, _) = decode(pem.as_bytes()).expect("block");
        let mut der = block.bytes.clone();
        let last = der.len() - 3;
        der[last] ^= 1;
        let tampered = format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            base64::engine::general_purpose::STANDARD.encode(&der)
        );
        assert_eq!(
            check_request(tampered.as_bytes()),
            Err("x509: ECDSA verification failure".to_string())
        );
    }

    #[test]
    fn subject_organizations_are_read_from_the_request() {
        let request = crate::signer::test_request("alice", "system:masters", Vec::new());
        assert_eq!(
            subject_organizations(&request),
            Ok(vec!["system:masters".to_string()])
        );
        let plain = decode(csr_pem().as_bytes()).expect("pem").0.bytes;
        assert_eq!(subject_organizations(&plain), Ok(Vec::new()));
        assert_eq!(
            subject_organizations(b"nope"),
            Err("asn1: structure error: malformed certificate request".to_string())
        );
    }

    #[test]
    fn certificates_are_certificate_blocks() {
        assert_eq!(check_certificates(b""), Ok(()));
        let cert = certificate_pem();
        assert_eq!(check_certificates(cert.as_bytes()), Ok(()));
        assert_eq!(
            check_certificates(format!("{cert}{cert}").as_bytes()),
            Ok(())
        );
        assert_eq!(
            check_certificates(csr_pem().as_bytes()),
            Err("only CERTIFICATE PEM blocks are allowed, found \"CERTIFICATE REQUEST\"".into())
        );
        assert_eq!(
            check_certificates(b"not pem"),
            Err("must contain at least one CERTIFICATE PEM block".into())
        );
        assert_eq!(
            check_certificates(b"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"),
            Err("found CERTIFICATE PEM block containing 0 certificates".into())
        );
        assert_eq!(
            check_certificates(
                b"-----BEGIN CERTIFICATE-----\nK: v\n\naGk=\n-----END CERTIFICATE-----\n"
            ),
            Err("no PEM block headers are permitted".into())
        );
    }
}
