//! Authentication and authorization.
//!
//! Every request passes through [`Auth::attributes`]: a client certificate the server's CA
//! issued authenticates its subject ([`x509`]), else the bearer token is authenticated (the
//! server's admin token is `korral-admin` in `system:masters`; TokenRequest-issued tokens are
//! their service account), `Impersonate-*` headers are applied (each one authorized with the
//! `impersonate` verb, as upstream), and the request's [`Attributes`] are authorized, under
//! [`AuthorizationMode::Rbac`], by the [`rbac`] authorizer against the live storage snapshot.
//! A denied request answers 403 `Forbidden` with upstream's message before anything runs.
//!
//! RBAC writes by anyone outside `system:masters` also pass [`escalation`]: nobody grants
//! (through a role or a binding) permissions they do not hold themselves.
//!
//! The module also serves the access-review APIs ([`reviews`]), creates the bootstrap roles
//! ([`bootstrap`]) and runs the ClusterRole aggregation controller ([`aggregation`]).

pub mod aggregation;
pub mod attributes;
pub mod bootstrap;
pub mod escalation;
pub mod impersonation;
pub mod rbac;
pub mod reviews;
pub mod token;
pub mod user;
pub mod x509;

use std::sync::Arc;

use http::{HeaderMap, Method, header};

pub use attributes::Attributes;
pub use rbac::Decision;
pub use token::TokenSigner;
pub use user::UserInfo;
pub use x509::{ClientCa, ClientCertificate};

use crate::error::ApiError;
use crate::objects::Objects;
use crate::server::AuthorizationMode;
use crate::storage::{Storage, object_key};

/// Decides whether `attrs` is allowed under `mode`, against the roles and bindings in
/// `storage` now (the authorizer the request filter uses, for admission plugins that authorize
/// the requester again: CertificateApproval, CertificateSigning).
pub fn authorize(mode: AuthorizationMode, storage: &dyn Storage, attrs: &Attributes) -> Decision {
    match mode {
        AuthorizationMode::AlwaysAllow => Decision::allow(""),
        AuthorizationMode::Rbac => rbac::authorize(&storage.snapshot(), attrs),
    }
}

/// The server's authenticator and authorizer.
pub struct Auth {
    mode: AuthorizationMode,
    admin_token: Option<String>,
    signer: TokenSigner,
    objects: Arc<Objects>,
    /// The CA whose client certificates authenticate their subject (`None`: certificates
    /// are not looked at).
    client_ca: Option<ClientCa>,
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    // Compare fixed-size digests, so neither the position of the first difference nor the
    // length of the expected token shows in the time taken.
    let a = ring::digest::digest(&ring::digest::SHA256, a);
    let b = ring::digest::digest(&ring::digest::SHA256, b);
    let diff = a
        .as_ref()
        .iter()
        .zip(b.as_ref())
        .fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
    std::hint::black_box(diff) == 0
}

/// Seconds since the epoch.
pub fn now_seconds() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The bearer token of a request, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

impl Auth {
    /// An authenticator for `admin_token` (`None`: requests without a token are the admin,
    /// for plain-HTTP loopback serving) with service account tokens from `signer`.
    pub fn new(
        mode: AuthorizationMode,
        admin_token: Option<String>,
        signer: TokenSigner,
        objects: Arc<Objects>,
    ) -> Self {
        Self {
            mode,
            admin_token,
            signer,
            objects,
            client_ca: None,
        }
    }

    /// Authenticates the client certificates `ca` issued (see [`x509`]).
    pub fn with_client_ca(mut self, ca: Option<ClientCa>) -> Self {
        self.client_ca = ca;
        self
    }

    /// The authorization mode.
    pub fn mode(&self) -> AuthorizationMode {
        self.mode
    }

    /// The service account token signer.
    pub fn signer(&self) -> &TokenSigner {
        &self.signer
    }

    /// The object layer.
    pub fn objects(&self) -> &Arc<Objects> {
        &self.objects
    }

    /// Who a bearer token belongs to, and the audiences it is valid for among `audiences`
    /// (the server's own, [`token::ISSUER`], when `None`), as upstream's token authenticators
    /// decide: a service account token must share an audience with them (one without
    /// audiences counts as the server's); the admin token is valid for the server's audience
    /// only, and reports no audiences when none are asked for.
    pub fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<(UserInfo, Vec<String>), TokenRejection> {
        let implicit = [token::ISSUER.to_string()];
        if let Some(admin) = &self.admin_token
            && constant_time_eq(token.as_bytes(), admin.as_bytes())
        {
            return match audiences {
                None => Ok((UserInfo::admin(), Vec::new())),
                Some(target) => {
                    let shared = intersect(&implicit, target);
                    if shared.is_empty() {
                        Err(TokenRejection::Invalid)
                    } else {
                        Ok((UserInfo::admin(), shared))
                    }
                }
            };
        }
        let claims = self
            .signer
            .verify(token, now_seconds())
            .ok_or(TokenRejection::Invalid)?;
        let own = if claims.audiences.is_empty() {
            implicit.to_vec()
        } else {
            claims.audiences.clone()
        };
        let target = audiences.unwrap_or(&implicit);
        let shared = intersect(&own, target);
        if shared.is_empty() {
            return Err(TokenRejection::Audiences {
                token: own,
                target: target.to_vec(),
            });
        }
        // The token dies with its service account (a new one of the same name has a new uid).
        let key = object_key("", "serviceaccounts", Some(&claims.namespace), &claims.name);
        let sa = self
            .objects
            .storage()
            .get(&key)
            .ok_or(TokenRejection::Invalid)?;
        if crate::meta::uid(&sa) != claims.uid || crate::meta::is_deleting(&sa) {
            return Err(TokenRejection::Invalid);
        }
        // A bound token dies with the object it is bound to.
        let alive = |resource: &str, namespace: Option<&str>, object: &token::BoundObject| {
            let key = object_key("", resource, namespace, &object.name);
            self.objects.storage().get(&key).is_some_and(|o| {
                crate::meta::uid(&o) == object.uid && !crate::meta::is_deleting(&o)
            })
        };
        let bound = &claims.bound;
        let ns = Some(claims.namespace.as_str());
        if bound.pod.as_ref().is_some_and(|p| !alive("pods", ns, p))
            || bound
                .secret
                .as_ref()
                .is_some_and(|s| !alive("secrets", ns, s))
            || (bound.pod.is_none()
                && bound
                    .node
                    .as_ref()
                    .is_some_and(|n| !alive("nodes", None, n)))
        {
            return Err(TokenRejection::Invalid);
        }
        let mut user = UserInfo::service_account(&claims.namespace, &claims.name, &claims.uid);
        let mut extra = |key: &str, value: &str| {
            if !value.is_empty() {
                user.extra.insert(
                    format!("authentication.kubernetes.io/{key}"),
                    vec![value.to_string()],
                );
            }
        };
        if !claims.id.is_empty() {
            extra("credential-id", &format!("JTI={}", claims.id));
        }
        if let Some(pod) = &bound.pod {
            extra("pod-name", &pod.name);
            extra("pod-uid", &pod.uid);
        }
        if let Some(node) = &bound.node {
            extra("node-name", &node.name);
            extra("node-uid", &node.uid);
        }
        Ok((user, shared))
    }

    /// Authenticates a request: its client certificate when the CA issued it, else its
    /// bearer token; 401 `Unauthorized` without either.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&ClientCertificate>,
    ) -> Result<UserInfo, ApiError> {
        if let (Some(ca), Some(certificate)) = (&self.client_ca, certificate)
            && let Some(user) = ca.authenticate(certificate, now_seconds())
        {
            return Ok(user);
        }
        match (bearer_token(headers), &self.admin_token) {
            (Some(token), _) => match self.authenticate_token(token, None) {
                Ok((user, _)) => Ok(user),
                Err(_) if self.admin_token.is_none() => Ok(UserInfo::admin()),
                Err(_) => Err(ApiError::unauthorized()),
            },
            (None, None) => Ok(UserInfo::admin()),
            (None, Some(_)) => Err(ApiError::unauthorized()),
        }
    }

    /// Decides whether `attrs` is allowed under the server's mode.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        authorize(self.mode, self.objects.storage().as_ref(), attrs)
    }

    /// The attributes of `req`: those the front filter already computed from its credentials
    /// ([`Described`], taken out of its extensions) or else [`Auth::attributes`]; authorized
    /// either way.
    pub(crate) fn request_attributes<B>(
        &self,
        req: &mut http::Request<B>,
        query: &[(String, String)],
    ) -> Result<Attributes, ApiError> {
        if let Some(Described(attrs)) = req.extensions_mut().remove::<Described>() {
            self.check(&attrs)?;
            return Ok(attrs);
        }
        self.attributes(
            req.method(),
            req.uri().path(),
            query,
            req.headers(),
            req.extensions().get(),
        )
    }

    /// Authorizes `attrs`: 403 `Forbidden` with upstream's message when denied.
    pub fn check(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let decision = self.authorize(attrs);
        if decision.allowed {
            Ok(())
        } else {
            Err(attrs.forbidden(&decision.reason))
        }
    }

    /// Authenticates, impersonates and authorizes a request; returns its attributes.
    pub fn attributes(
        &self,
        method: &Method,
        path: &str,
        query: &[(String, String)],
        headers: &HeaderMap,
        certificate: Option<&ClientCertificate>,
    ) -> Result<Attributes, ApiError> {
        let user = self.authenticate(headers, certificate)?;
        let user = impersonation::impersonate(self, user, headers)?;
        let attrs = attributes::from_request(user, method, path, query);
        self.check(&attrs)?;
        Ok(attrs)
    }
}

/// A request's attributes (authenticated user after impersonation, verb, resource) as a filter
/// in front of the handler computed them, carried in the request's extensions so that the
/// handler does not authenticate the request a second time.
#[derive(Debug, Clone)]
pub(crate) struct Described(pub(crate) Attributes);

/// Why a bearer token does not authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRejection {
    /// Not a token this server issued or knows (or its service account is gone).
    Invalid,
    /// A service account token for none of the audiences asked for.
    Audiences {
        /// The token's audiences.
        token: Vec<String>,
        /// The audiences asked for.
        target: Vec<String>,
    },
}

impl TokenRejection {
    /// The error a TokenReview reports, as upstream's union of authenticators words it.
    pub fn review_error(&self) -> String {
        match self {
            Self::Invalid => "invalid bearer token".to_string(),
            Self::Audiences { token, target } => format!(
                "[invalid bearer token, token audiences {} is invalid for the target audiences {}]",
                go_quoted(token),
                go_quoted(target)
            ),
        }
    }
}

/// A string list as Go's `%q` prints it: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| serde_json::Value::from(s.as_str()).to_string())
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// The members of `a` that `b` holds, in `a`'s order (upstream's `Audiences.Intersect`).
fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::registry::Registry;
    use crate::storage::MemoryStorage;

    /// A request's attributes computed in front of the handler are taken (and authorized)
    /// instead of authenticating the request again; without them the request authenticates.
    #[test]
    fn described_requests_are_not_authenticated_again() {
        let objects = Arc::new(Objects::new(
            Arc::new(MemoryStorage::new()),
            Arc::new(Registry::with_builtins()),
        ));
        let signer = TokenSigner::ephemeral().expect("signer");
        let auth = Auth::new(
            AuthorizationMode::Rbac,
            Some("secret".into()),
            signer,
            objects,
        );
        let query = Vec::new();
        let request = || {
            http::Request::get("/api/v1/namespaces/default/configmaps")
                .body(())
                .expect("request")
        };
        // No credentials: 401.
        let err = auth
            .request_attributes(&mut request(), &query)
            .expect_err("anonymous");
        assert_eq!(err.code, 401);
        // Described as a user without roles: authorized as that user (403), not authenticated.
        let mut described = request();
        let alice = attributes::from_request(
            user::UserInfo {
                name: "alice".into(),
                ..Default::default()
            },
            &Method::GET,
            "/api/v1/namespaces/default/configmaps",
            &query,
        );
        described.extensions_mut().insert(Described(alice.clone()));
        let err = auth
            .request_attributes(&mut described, &query)
            .expect_err("alice has no role");
        assert_eq!(err.code, 403, "{err:?}");
        // Taken out: a second call (no credentials either) authenticates again.
        assert_eq!(
            auth.request_attributes(&mut described, &query)
                .expect_err("anonymous")
                .code,
            401
        );
        // Described as the admin: allowed, with the described attributes.
        let mut admin = request();
        let attrs = attributes::from_request(
            user::UserInfo::admin(),
            &Method::GET,
            "/api/v1/namespaces/default/configmaps",
            &query,
        );
        admin.extensions_mut().insert(Described(attrs.clone()));
        assert_eq!(
            auth.request_attributes(&mut admin, &query).expect("admin"),
            attrs
        );
    }

    #[test]
    fn token_comparison_is_exact() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(constant_time_eq(b"", b""));
    }
}
