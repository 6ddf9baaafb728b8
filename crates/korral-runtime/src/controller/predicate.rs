//! Predicates: filters on the cache events of a [`Kind`](super::Kind) source.
//!
//! As in controller-runtime, the "changed" predicates only filter updates: creations and
//! deletions always pass. Combine them with [`And`], [`Or`] and [`Not`]
//! (`Or(GenerationChanged, LabelsChanged)`), or with the [`Predicate`] methods once the
//! object type is known.

use std::sync::Arc;

use kube::Resource;

use crate::cache::{CacheEvent, EventKind};

/// A filter on the events of one source: `true` lets the event through to its handler.
pub trait Predicate<K>: Send + Sync + 'static {
    /// Whether `event` passes.
    fn evaluate(&self, event: &CacheEvent<K>) -> bool;

    /// Passes when both `self` and `other` pass.
    fn and<P: Predicate<K>>(self, other: P) -> And<Self, P>
    where
        Self: Sized,
    {
        And(self, other)
    }

    /// Passes when `self` or `other` passes.
    fn or<P: Predicate<K>>(self, other: P) -> Or<Self, P>
    where
        Self: Sized,
    {
        Or(self, other)
    }

    /// Passes when `self` does not.
    fn not(self) -> Not<Self>
    where
        Self: Sized,
    {
        Not(self)
    }
}

/// A shared, type-erased predicate.
pub type BoxPredicate<K> = Arc<dyn Predicate<K>>;

impl<K: 'static> Predicate<K> for BoxPredicate<K> {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        (**self).evaluate(event)
    }
}

/// Both predicates pass.
#[derive(Clone, Copy, Debug)]
pub struct And<A, B>(pub A, pub B);

impl<K, A: Predicate<K>, B: Predicate<K>> Predicate<K> for And<A, B> {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        self.0.evaluate(event) && self.1.evaluate(event)
    }
}

/// Either predicate passes.
#[derive(Clone, Copy, Debug)]
pub struct Or<A, B>(pub A, pub B);

impl<K, A: Predicate<K>, B: Predicate<K>> Predicate<K> for Or<A, B> {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        self.0.evaluate(event) || self.1.evaluate(event)
    }
}

/// The predicate does not pass.
#[derive(Clone, Copy, Debug)]
pub struct Not<A>(pub A);

impl<K, A: Predicate<K>> Predicate<K> for Not<A> {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        !self.0.evaluate(event)
    }
}

/// A predicate from a closure.
#[derive(Clone, Copy, Debug)]
pub struct Custom<F>(pub F);

impl<K, F> Predicate<K> for Custom<F>
where
    F: Fn(&CacheEvent<K>) -> bool + Send + Sync + 'static,
{
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        (self.0)(event)
    }
}

/// Lets every event through.
#[derive(Clone, Copy, Debug, Default)]
pub struct Always;

impl<K> Predicate<K> for Always {
    fn evaluate(&self, _event: &CacheEvent<K>) -> bool {
        true
    }
}

fn update_changed<K: Resource, T: PartialEq>(
    event: &CacheEvent<K>,
    field: impl Fn(&K) -> T,
) -> bool {
    match (event.kind, &event.previous) {
        (EventKind::Modified, Some(previous)) => field(previous) != field(&event.object),
        _ => true,
    }
}

/// Passes updates that change `metadata.generation` (spec changes, for types that have a
/// generation); metadata-only and status-only updates are filtered out.
#[derive(Clone, Copy, Debug, Default)]
pub struct GenerationChanged;

impl<K: Resource> Predicate<K> for GenerationChanged {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        update_changed(event, |o| o.meta().generation)
    }
}

/// Passes updates that change `metadata.labels`.
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelsChanged;

impl<K: Resource> Predicate<K> for LabelsChanged {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        update_changed(event, |o| o.meta().labels.clone().unwrap_or_default())
    }
}

/// Passes updates that change `metadata.annotations`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnnotationsChanged;

impl<K: Resource> Predicate<K> for AnnotationsChanged {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        update_changed(event, |o| o.meta().annotations.clone().unwrap_or_default())
    }
}

/// Passes updates that change `metadata.resourceVersion` (filters out resyncs that replay an
/// unchanged object).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceVersionChanged;

impl<K: Resource> Predicate<K> for ResourceVersionChanged {
    fn evaluate(&self, event: &CacheEvent<K>) -> bool {
        update_changed(event, |o| o.meta().resource_version.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::ObjectMeta;

    fn deployment(generation: i64, label: &str) -> Arc<Deployment> {
        Arc::new(Deployment {
            metadata: ObjectMeta {
                generation: Some(generation),
                labels: Some([("app".to_owned(), label.to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        })
    }

    fn modified(old: Arc<Deployment>, new: Arc<Deployment>) -> CacheEvent<Deployment> {
        CacheEvent {
            kind: EventKind::Modified,
            object: new,
            previous: Some(old),
        }
    }

    #[test]
    fn changed_predicates_and_combinators() {
        let labels_only = modified(deployment(1, "a"), deployment(1, "b"));
        let spec = modified(deployment(1, "a"), deployment(2, "a"));
        let added = CacheEvent {
            kind: EventKind::Added,
            object: deployment(1, "a"),
            previous: None,
        };
        assert!(!GenerationChanged.evaluate(&labels_only));
        assert!(GenerationChanged.evaluate(&spec));
        assert!(GenerationChanged.evaluate(&added));
        assert!(LabelsChanged.evaluate(&labels_only));
        assert!(!LabelsChanged.evaluate(&spec));
        assert!(Or(GenerationChanged, LabelsChanged).evaluate(&labels_only));
        assert!(!And(GenerationChanged, LabelsChanged).evaluate(&labels_only));
        assert!(Not(GenerationChanged).evaluate(&labels_only));
        let p: Not<Or<_, _>> = Predicate::<Deployment>::not(Or(GenerationChanged, LabelsChanged));
        assert!(!p.evaluate(&labels_only));
        let custom = Custom(|e: &CacheEvent<Deployment>| e.kind == EventKind::Added);
        assert!(custom.evaluate(&added));
        assert!(!custom.evaluate(&spec));
        assert!(!AnnotationsChanged.evaluate(&spec));
        assert!(ResourceVersionChanged.evaluate(&added));
    }
}
