//! Injects a CA into what calls the webhooks: every webhook of the named
//! Validating/MutatingWebhookConfigurations and the conversion webhook of the named CRDs
//! (`clientConfig.caBundle`), through the kube client. A configuration that does not exist (yet)
//! is reported missing, not an error: the caller retries.

use std::fmt::Debug;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What gets the `caBundle`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum InjectTarget {
    /// Every webhook of this ValidatingWebhookConfiguration.
    Validating(String),
    /// Every webhook of this MutatingWebhookConfiguration.
    Mutating(String),
    /// The conversion webhook of this CustomResourceDefinition.
    Crd(String),
}

impl std::fmt::Display for InjectTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Validating(name) => write!(f, "validatingwebhookconfiguration/{name}"),
            Self::Mutating(name) => write!(f, "mutatingwebhookconfiguration/{name}"),
            Self::Crd(name) => write!(f, "customresourcedefinition/{name}"),
        }
    }
}

/// The outcome for one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injected {
    /// The `caBundle` was written.
    Updated,
    /// It held the CA already.
    Unchanged,
    /// The object does not exist (yet).
    Missing,
    /// A CRD without a webhook conversion (`spec.conversion.strategy: Webhook` with a
    /// `clientConfig`): nothing to inject into (yet).
    NoWebhook,
    /// Reading or writing failed (a conflict, say); retried.
    Failed(String),
}

/// What an injection round did, per target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InjectReport {
    /// Each target and its outcome, in the order given.
    pub outcomes: Vec<(InjectTarget, Injected)>,
}

impl InjectReport {
    /// Whether every target holds the CA now.
    pub fn complete(&self) -> bool {
        self.outcomes
            .iter()
            .all(|(_, o)| matches!(o, Injected::Updated | Injected::Unchanged))
    }

    /// The targets that do not hold the CA (missing, without webhook, failed).
    pub fn pending(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|(_, o)| !matches!(o, Injected::Updated | Injected::Unchanged))
            .map(|(t, o)| format!("{t} ({o:?})"))
            .collect()
    }
}

/// Sets `bundle` on `slot`; returns whether it changed.
fn set(slot: &mut Option<ByteString>, ca: &[u8]) -> bool {
    if slot.as_ref().is_some_and(|b| b.0 == ca) {
        return false;
    }
    *slot = Some(ByteString(ca.to_vec()));
    true
}

/// Reads `name`, lets `edit` set the CA (`None`: nothing to set), writes it back when changed.
async fn update<K>(api: Api<K>, name: &str, edit: impl FnOnce(&mut K) -> Option<bool>) -> Injected
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    let mut object = match api.get_opt(name).await {
        Ok(Some(object)) => object,
        Ok(None) => return Injected::Missing,
        Err(err) => return Injected::Failed(err.to_string()),
    };
    match edit(&mut object) {
        None => Injected::NoWebhook,
        Some(false) => Injected::Unchanged,
        Some(true) => match api.replace(name, &PostParams::default(), &object).await {
            Ok(_) => Injected::Updated,
            Err(err) => Injected::Failed(err.to_string()),
        },
    }
}

/// Injects `ca_pem` into one target.
pub async fn inject_one(client: &Client, target: &InjectTarget, ca_pem: &[u8]) -> Injected {
    match target {
        InjectTarget::Validating(name) => {
            let api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
            update(api, name, |config| {
                let mut changed = false;
                for webhook in config.webhooks.iter_mut().flatten() {
                    changed |= set(&mut webhook.client_config.ca_bundle, ca_pem);
                }
                Some(changed)
            })
            .await
        }
        InjectTarget::Mutating(name) => {
            let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
            update(api, name, |config| {
                let mut changed = false;
                for webhook in config.webhooks.iter_mut().flatten() {
                    changed |= set(&mut webhook.client_config.ca_bundle, ca_pem);
                }
                Some(changed)
            })
            .await
        }
        InjectTarget::Crd(name) => {
            let api = Api::<CustomResourceDefinition>::all(client.clone());
            update(api, name, |crd| {
                let conversion = crd.spec.conversion.as_mut()?;
                if conversion.strategy != "Webhook" {
                    return None;
                }
                let client_config = conversion.webhook.as_mut()?.client_config.as_mut()?;
                Some(set(&mut client_config.ca_bundle, ca_pem))
            })
            .await
        }
    }
}

/// Injects `ca_pem` into every target.
pub async fn inject(client: &Client, targets: &[InjectTarget], ca_pem: &[u8]) -> InjectReport {
    let mut report = InjectReport::default();
    for target in targets {
        let outcome = inject_one(client, target, ca_pem).await;
        report.outcomes.push((target.clone(), outcome));
    }
    report
}
