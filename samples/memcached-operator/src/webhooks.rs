//! The Memcached webhooks (kubebuilder's webhook tutorial for this kind): a defaulting webhook
//! (`spec.size` unset, or 0, becomes [`DEFAULT_SIZE`]) and a validating webhook (`spec.size`
//! between [`MIN_SIZE`] and [`MAX_SIZE`], with a warning above [`WARN_ABOVE`]), served on
//! kubebuilder's paths (`/mutate-cache-example-com-v1-memcached`,
//! `/validate-cache-example-com-v1-memcached`).

use korral::webhook::{
    AdmissionRequest, Defaulter, Denial, FieldError, Validator, Warnings, WebhookError,
    WebhookServer,
};
use kube::core::DynamicObject;

use crate::Memcached;

/// The size given to a Memcached that sets none.
pub const DEFAULT_SIZE: i32 = 1;
/// The smallest size accepted.
pub const MIN_SIZE: i32 = 1;
/// The largest size accepted.
pub const MAX_SIZE: i32 = 5;
/// Sizes above this are accepted with a warning.
pub const WARN_ABOVE: i32 = 3;

/// Sets `spec.size` to [`DEFAULT_SIZE`] when it is unset (0, as Go's `int32` with `omitempty`).
#[derive(Debug, Clone, Copy, Default)]
pub struct MemcachedDefaulter;

impl Defaulter<Memcached> for MemcachedDefaulter {
    async fn default(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        memcached: &mut Memcached,
    ) -> Result<(), Denial> {
        if memcached.spec.size == 0 {
            memcached.spec.size = DEFAULT_SIZE;
        }
        Ok(())
    }
}

/// Accepts sizes from [`MIN_SIZE`] to [`MAX_SIZE`], warning above [`WARN_ABOVE`].
#[derive(Debug, Clone, Copy, Default)]
pub struct MemcachedValidator;

/// The warnings for `memcached`, or the denial of its size.
pub fn check_size(memcached: &Memcached) -> Result<Warnings, Denial> {
    let size = memcached.spec.size;
    if !(MIN_SIZE..=MAX_SIZE).contains(&size) {
        return Err(Denial::invalid([FieldError::invalid(
            "spec.size",
            size,
            &format!("must be between {MIN_SIZE} and {MAX_SIZE}"),
        )]));
    }
    if size > WARN_ABOVE {
        return Ok(vec![format!(
            "spec.size {size} is above {WARN_ABOVE}: each memcached pod reserves 64 MiB of cache"
        )]);
    }
    Ok(Vec::new())
}

impl Validator<Memcached> for MemcachedValidator {
    async fn validate_create(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        memcached: &Memcached,
    ) -> Result<Warnings, Denial> {
        check_size(memcached)
    }

    async fn validate_update(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        _old: &Memcached,
        new: &Memcached,
    ) -> Result<Warnings, Denial> {
        check_size(new)
    }
}

/// Registers the defaulting and the validating webhook of Memcached on `server`.
pub fn register(server: &mut WebhookServer) -> Result<(), WebhookError> {
    server.defaulter::<Memcached, _>(MemcachedDefaulter)?;
    server.validator::<Memcached, _>(MemcachedValidator)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemcachedSpec;

    fn memcached(size: i32) -> Memcached {
        Memcached::new("m", MemcachedSpec { size })
    }

    #[test]
    fn sizes_one_to_five_pass_with_a_warning_above_three() {
        assert_eq!(check_size(&memcached(1)), Ok(Vec::new()));
        assert_eq!(check_size(&memcached(3)), Ok(Vec::new()));
        assert_eq!(
            check_size(&memcached(4)),
            Ok(vec![
                "spec.size 4 is above 3: each memcached pod reserves 64 MiB of cache".to_owned()
            ])
        );
        for size in [0, 6, -1] {
            let denial = check_size(&memcached(size)).expect_err("denied");
            assert_eq!(
                denial.message("cache.example.com", "Memcached", "m"),
                format!(
                    "Memcached.cache.example.com \"m\" is invalid: spec.size: Invalid value: {size}: must be between 1 and 5"
                )
            );
        }
    }

    #[test]
    fn the_server_serves_kubebuilder_paths() {
        let mut server = WebhookServer::new();
        register(&mut server).expect("register");
        assert_eq!(
            server.paths(),
            [
                "/mutate-cache-example-com-v1-memcached",
                "/validate-cache-example-com-v1-memcached"
            ]
        );
    }
}
