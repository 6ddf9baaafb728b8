//! Authentication and authorization of metrics requests against the API server, as
//! controller-runtime's `filters.WithAuthenticationAndAuthorization` does: the bearer token is
//! checked with a `TokenReview`, the user it names is authorized with a `SubjectAccessReview`
//! for the non-resource URL (`path` = the request path, `verb` = the lower-case method, so
//! `GET /metrics` needs `get` on `/metrics`, what kubebuilder's `metrics-reader` ClusterRole
//! grants).
//!
//! No token, a malformed one, or one the API server does not authenticate answer
//! `401 Unauthorized`; a denied review `403` ("Authorization denied for user …"); a review that
//! could not be made `500`. Unlike controller-runtime, allowed decisions are cached for a short
//! time (default 30 s, [`MetricsAuth::with_cache_ttl`]) so a scraper every few seconds does not
//! cost two API requests per scrape; denials and failures are never cached.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderMap;
use http::header::AUTHORIZATION;
use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::time::Instant;

/// How long an allowed decision is reused by default.
pub const DEFAULT_ALLOW_CACHE_TTL: Duration = Duration::from_secs(30);
/// At most this many allowed decisions are kept; the cache is emptied when it is full.
const CACHE_CAPACITY: usize = 1024;

/// What the filter decided for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthDecision {
    /// The token is valid and its user may `verb` the path.
    Allowed {
        /// The authenticated user name.
        user: String,
    },
    /// No bearer token, or one the API server did not authenticate (or could not review).
    Unauthenticated,
    /// The user is authenticated but not allowed.
    Forbidden {
        /// The authenticated user name.
        user: String,
        /// The reviewer's reason, if any.
        reason: String,
    },
    /// The SubjectAccessReview could not be made.
    ReviewFailed {
        /// The authenticated user name.
        user: String,
        /// The error.
        error: String,
    },
}

/// The TokenReview + SubjectAccessReview filter of the secure metrics endpoint (cheap to
/// clone; clones share the cache).
#[derive(Clone)]
pub struct MetricsAuth {
    client: kube::Client,
    cache: Arc<Mutex<AllowCache>>,
}

impl std::fmt::Debug for MetricsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsAuth").finish_non_exhaustive()
    }
}

impl MetricsAuth {
    /// Reviews through `client` (which needs `create` on `tokenreviews` and
    /// `subjectaccessreviews`: kubebuilder's `metrics-auth-role`).
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            cache: Arc::new(Mutex::new(AllowCache::new(DEFAULT_ALLOW_CACHE_TTL))),
        }
    }

    /// Reuses allowed decisions for `ttl` (zero: review every request).
    pub fn with_cache_ttl(self, ttl: Duration) -> Self {
        Self {
            cache: Arc::new(Mutex::new(AllowCache::new(ttl))),
            ..self
        }
    }

    /// Decides whether a request with `headers` may `method` the non-resource `path`.
    pub async fn review(
        &self,
        headers: &HeaderMap,
        method: &http::Method,
        path: &str,
    ) -> AuthDecision {
        let Some(token) = bearer_token(headers) else {
            return AuthDecision::Unauthenticated;
        };
        let verb = method.as_str().to_ascii_lowercase();
        let key = CacheKey {
            token: token.to_owned(),
            path: path.to_owned(),
            verb: verb.clone(),
        };
        if let Some(user) = self.lock_cache().get(&key) {
            return AuthDecision::Allowed { user };
        }
        let Some(user) = self.authenticate(token).await else {
            return AuthDecision::Unauthenticated;
        };
        let decision = self.authorize(&user, path, &verb).await;
        if let AuthDecision::Allowed { user } = &decision {
            self.lock_cache().insert(key, user.clone());
        }
        decision
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, AllowCache> {
        // The cache holds no invariant a panic could break halfway.
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The user the token belongs to, per a TokenReview; `None` when not authenticated.
    async fn authenticate(&self, token: &str) -> Option<ReviewedUser> {
        // Built from JSON: `spec.token` is optional in some Kubernetes versions' types and
        // required in others, and the user's binary picks the version.
        let review: TokenReview = match serde_json::from_value(serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        })) {
            Ok(review) => review,
            Err(error) => {
                tracing::warn!(%error, "metrics: building the TokenReview failed");
                return None;
            }
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let status = match api.create(&PostParams::default(), &review).await {
            Ok(reviewed) => reviewed.status?,
            Err(error) => {
                tracing::warn!(%error, "metrics: the TokenReview failed");
                return None;
            }
        };
        if status.authenticated != Some(true) {
            tracing::debug!(error = ?status.error, "metrics: token not authenticated");
            return None;
        }
        let user = status.user?;
        Some(ReviewedUser {
            name: user.username.unwrap_or_default(),
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
        })
    }

    async fn authorize(&self, user: &ReviewedUser, path: &str, verb: &str) -> AuthDecision {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some(verb.to_owned()),
                }),
                resource_attributes: None,
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        match api.create(&PostParams::default(), &review).await {
            Ok(reviewed) => {
                let status = reviewed.status.unwrap_or_default();
                if status.allowed {
                    AuthDecision::Allowed {
                        user: user.name.clone(),
                    }
                } else {
                    AuthDecision::Forbidden {
                        user: user.name.clone(),
                        reason: status.reason.unwrap_or_default(),
                    }
                }
            }
            Err(error) => AuthDecision::ReviewFailed {
                user: user.name.clone(),
                error: error.to_string(),
            },
        }
    }
}

/// What a TokenReview said about a token's user.
struct ReviewedUser {
    name: String,
    uid: Option<String>,
    groups: Option<Vec<String>>,
    extra: Option<BTreeMap<String, Vec<String>>>,
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), as the
/// Kubernetes bearer-token authenticator reads it.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    token: String,
    path: String,
    verb: String,
}

/// Allowed decisions, each reused until it expires.
#[derive(Debug)]
struct AllowCache {
    ttl: Duration,
    entries: HashMap<CacheKey, (String, Instant)>,
}

impl AllowCache {
    fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: HashMap::new(),
        }
    }

    fn get(&mut self, key: &CacheKey) -> Option<String> {
        let (user, expires) = self.entries.get(key)?;
        if Instant::now() < *expires {
            return Some(user.clone());
        }
        self.entries.remove(key);
        None
    }

    fn insert(&mut self, key: CacheKey, user: String) {
        if self.ttl.is_zero() {
            return;
        }
        if self.entries.len() >= CACHE_CAPACITY {
            let now = Instant::now();
            self.entries.retain(|_, (_, expires)| *expires > now);
            if self.entries.len() >= CACHE_CAPACITY {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (user, Instant::now() + self.ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(value).expect("header"));
        headers
    }

    #[test]
    fn bearer_tokens_are_read_like_the_kubernetes_authenticator() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("BEARER abc extra")), Some("abc"));
        assert_eq!(bearer_token(&headers("Bearer ")), None);
        assert_eq!(bearer_token(&headers("Bearer")), None);
        assert_eq!(bearer_token(&headers("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    fn key(token: &str) -> CacheKey {
        CacheKey {
            token: token.to_owned(),
            path: "/metrics".to_owned(),
            verb: "get".to_owned(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn allowed_decisions_expire_after_the_ttl() {
        let mut cache = AllowCache::new(Duration::from_secs(30));
        cache.insert(key("a"), "alice".to_owned());
        assert_eq!(cache.get(&key("a")), Some("alice".to_owned()));
        assert_eq!(cache.get(&key("b")), None);
        tokio::time::advance(Duration::from_secs(31)).await;
        assert_eq!(cache.get(&key("a")), None);
        assert!(cache.entries.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_ttl_caches_nothing_and_the_cache_stays_bounded() {
        let mut off = AllowCache::new(Duration::ZERO);
        off.insert(key("a"), "alice".to_owned());
        assert_eq!(off.get(&key("a")), None);

        let mut cache = AllowCache::new(Duration::from_secs(30));
        for i in 0..CACHE_CAPACITY + 10 {
            cache.insert(key(&i.to_string()), "u".to_owned());
        }
        assert!(cache.entries.len() <= CACHE_CAPACITY);
        assert_eq!(
            cache.get(&key(&(CACHE_CAPACITY + 9).to_string())),
            Some("u".to_owned())
        );
    }
}
