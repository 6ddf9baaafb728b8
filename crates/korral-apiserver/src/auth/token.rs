//! Service account tokens: HS256-signed JWTs issued by TokenRequest and checked on every request.
//!
//! The signing key is random per in-memory server and kept in the data directory of a durable
//! one (`sa-signing.key`), so tokens survive restarts. A token names the service account's
//! namespace, name and uid; it is accepted only while that ServiceAccount exists with that uid
//! and the token has not expired.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde_json::{Value, json};

/// Issuer and default audience of the tokens.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// Key file inside a durable server's data directory.
pub const KEY_FILE: &str = "sa-signing.key";

/// Why the signing key could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SigningKeyError {
    /// Generating random bytes failed.
    #[error("generating the service account signing key: no randomness available")]
    Random,
    /// Reading or writing the key file failed.
    #[error("service account signing key {path}: {source}")]
    File {
        /// The key file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountClaims {
    /// Namespace of the service account.
    pub namespace: String,
    /// Name of the service account.
    pub name: String,
    /// Uid of the service account the token was issued for.
    pub uid: String,
    /// Audiences.
    pub audiences: Vec<String>,
    /// Expiry, seconds since the epoch.
    pub expires: i64,
    /// The token's id (`jti`).
    pub id: String,
    /// The objects the token is bound to (it dies with them).
    pub bound: BoundObjects,
}

/// An object a token is bound to: its name and uid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundObject {
    /// The object's name.
    pub name: String,
    /// The object's uid (empty for a pod's node that did not exist).
    pub uid: String,
}

/// The objects a TokenRequest bound a token to (`kubernetes.io.pod`, `.secret`, `.node`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundObjects {
    /// The pod (in the service account's namespace).
    pub pod: Option<BoundObject>,
    /// The secret (in the service account's namespace).
    pub secret: Option<BoundObject>,
    /// The node (a pod's node, or the object bound to).
    pub node: Option<BoundObject>,
}

impl BoundObjects {
    /// The claims under `kubernetes.io`.
    fn claims(&self, into: &mut serde_json::Map<String, Value>) {
        for (key, object) in [
            ("pod", &self.pod),
            ("secret", &self.secret),
            ("node", &self.node),
        ] {
            if let Some(o) = object {
                let mut claim = json!({"name": o.name});
                if !o.uid.is_empty() {
                    claim["uid"] = json!(o.uid);
                }
                into.insert(key.into(), claim);
            }
        }
    }

    /// Reads the claims under `kubernetes.io`.
    fn from_claims(k8s: &Value) -> Self {
        let object = |key: &str| {
            k8s.get(key).map(|o| BoundObject {
                name: o.get("name").and_then(Value::as_str).unwrap_or("").into(),
                uid: o.get("uid").and_then(Value::as_str).unwrap_or("").into(),
            })
        };
        BoundObjects {
            pod: object("pod"),
            secret: object("secret"),
            node: object("node"),
        }
    }
}

/// Signs and verifies service account tokens.
pub struct TokenSigner {
    key: hmac::Key,
}

fn random_key() -> Result<[u8; 32], SigningKeyError> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| SigningKeyError::Random)?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

impl TokenSigner {
    /// A signer with a fresh random key (tokens die with the server).
    pub fn ephemeral() -> Result<Self, SigningKeyError> {
        Ok(Self::from_key(&random_key()?))
    }

    /// A signer whose key lives in `dir` (created on first use, owner-only permissions).
    pub fn persistent(dir: &Path) -> Result<Self, SigningKeyError> {
        let path = dir.join(KEY_FILE);
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Some(key) = unhex(&text).filter(|k| k.len() >= 32)
        {
            return Ok(Self::from_key(&key));
        }
        let key = random_key()?;
        crate::kubeconfig::write(&path, &hex(&key)).map_err(|source| SigningKeyError::File {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Self::from_key(&key))
    }

    fn from_key(key: &[u8]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, key),
        }
    }

    /// Issues a token for a service account valid for `seconds` from `now` (epoch seconds),
    /// bound to `bound`.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        audiences: &[String],
        now: i64,
        seconds: i64,
        bound: &BoundObjects,
    ) -> String {
        let header = json!({"alg": "HS256", "typ": "JWT", "kid": "korral"});
        let mut k8s = serde_json::Map::new();
        k8s.insert("namespace".into(), json!(namespace));
        k8s.insert("serviceaccount".into(), json!({"name": name, "uid": uid}));
        bound.claims(&mut k8s);
        let claims = json!({
            "aud": audiences,
            "exp": now + seconds,
            "iat": now,
            "nbf": now,
            "iss": ISSUER,
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": k8s,
            "sub": super::user::service_account_user(namespace, name),
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = hmac::sign(&self.key, signing_input.as_bytes());
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )
    }

    /// Checks a token's signature and expiry at `now`; `None` when it is not one of ours.
    pub fn verify(&self, token: &str, now: i64) -> Option<ServiceAccountClaims> {
        let (signing_input, signature) = token.rsplit_once('.')?;
        let (_, payload) = signing_input.split_once('.')?;
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        hmac::verify(&self.key, signing_input.as_bytes(), &signature).ok()?;
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        let expires = claims.get("exp").and_then(Value::as_i64)?;
        if expires <= now {
            return None;
        }
        let k8s = claims.get("kubernetes.io")?;
        Some(ServiceAccountClaims {
            namespace: k8s.get("namespace")?.as_str()?.to_string(),
            name: k8s.pointer("/serviceaccount/name")?.as_str()?.to_string(),
            uid: k8s
                .pointer("/serviceaccount/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            audiences: crate::meta::strings(claims.get("aud")),
            expires,
            id: claims
                .get("jti")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            bound: BoundObjects::from_claims(k8s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_until_they_expire() {
        let signer = TokenSigner::ephemeral().expect("key");
        let token = signer.issue(
            "ns",
            "robot",
            "u1",
            &[ISSUER.to_string()],
            1000,
            600,
            &BoundObjects::default(),
        );
        let claims = signer.verify(&token, 1001).expect("valid");
        assert_eq!(
            (
                claims.namespace.as_str(),
                claims.name.as_str(),
                claims.uid.as_str()
            ),
            ("ns", "robot", "u1")
        );
        assert!(signer.verify(&token, 1600).is_none(), "expired");
        let other = TokenSigner::ephemeral().expect("key");
        assert!(other.verify(&token, 1001).is_none(), "other key");
        let mut tampered = token.clone();
        tampered.insert(token.len() / 2, 'x');
        assert!(signer.verify(&tampered, 1001).is_none());
        assert!(signer.verify("not-a-token", 1001).is_none());
    }

    #[test]
    fn persistent_key_survives_reopen() {
        let dir = tempfile::tempdir().expect("dir");
        let a = TokenSigner::persistent(dir.path()).expect("key");
        let token = a.issue("ns", "robot", "u1", &[], 0, 100, &BoundObjects::default());
        let b = TokenSigner::persistent(dir.path()).expect("key");
        assert!(b.verify(&token, 1).is_some());
    }
}
