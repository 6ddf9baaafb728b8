//! Periodic triggers: a runnable that sends a [`Tick`] on a channel every interval, for
//! controllers that watch something outside the cluster (an object store, a DNS name, an
//! external API) and must look at it again even when nothing in the cluster changed.
//!
//! [`PeriodicTrigger::new`] returns the trigger and the [`Channel`] source its ticks arrive on.
//! Give the source to [`Controller::watches`](crate::controller::Controller::watches) with a
//! [`MapFn`](crate::controller::MapFn) that turns a tick into the keys to reconcile, and add the
//! trigger to the manager with [`PeriodicTrigger::add_to`] (leader-elected by default, so only
//! the leader polls the outside world).
//!
//! The first tick is sent as soon as the trigger starts, then one every interval. Ticks are
//! never queued behind a slow consumer: when the previous tick has not been taken yet, the new
//! one is dropped (and counted in [`Tick::skipped`] of the next one sent), since a tick only
//! says "look again". The trigger stops when the manager stops or when the receiving side is
//! dropped.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use korral_runtime::cache::Scope;
//! use korral_runtime::controller::{Controller, MapFn};
//! use korral_runtime::manager::Manager;
//! use korral_runtime::reconcile::{Action, ObjectRef, ReconcileResult};
//! use korral_runtime::trigger::{PeriodicTrigger, Tick};
//!
//! async fn reconcile(_cm: Arc<ConfigMap>, _ctx: Arc<()>) -> ReconcileResult {
//!     Ok(Action::done())
//! }
//!
//! # async fn example(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let mut manager = Manager::builder(client).build()?;
//! let configmaps = manager.cache().informer::<ConfigMap>(Scope::All)?;
//! let (trigger, ticks) = PeriodicTrigger::new("resync", Duration::from_secs(60));
//! let controller = Controller::new(manager.cache().clone(), "configmaps")
//!     .for_::<ConfigMap>(Scope::All)
//!     .watches(ticks, MapFn(move |_: &Tick| {
//!         configmaps.list().iter().filter_map(|cm| ObjectRef::from_object(cm.as_ref())).collect()
//!     }));
//! manager.add_controller(controller, reconcile, Arc::new(()));
//! trigger.add_to(&mut manager);
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::time::MissedTickBehavior;
use tracing::{debug, info};

use crate::controller::Channel;
use crate::manager::Manager;
use crate::reconcile::BoxError;

/// One tick of a [`PeriodicTrigger`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tick {
    /// The trigger's name.
    pub trigger: String,
    /// 0 for the first tick sent, then counting up by one per tick sent.
    pub sequence: u64,
    /// How many ticks were dropped since the previous one sent, because it had not been taken
    /// yet.
    pub skipped: u64,
    /// When the tick was sent.
    pub at: jiff::Timestamp,
}

/// Sends a [`Tick`] every interval while it runs; see the [module docs](self).
#[derive(Debug)]
pub struct PeriodicTrigger {
    name: String,
    interval: Duration,
    needs_leader: bool,
    sender: mpsc::Sender<Tick>,
}

impl PeriodicTrigger {
    /// A trigger named `name` (the runnable's name in logs) ticking every `interval` (at least
    /// 1 ms), and the channel source receiving its ticks.
    pub fn new(name: impl Into<String>, interval: Duration) -> (Self, Channel<Tick>) {
        let (sender, receiver) = mpsc::channel(1);
        (
            Self::with_sender(name, interval, sender),
            Channel::new(receiver),
        )
    }

    /// A trigger sending its ticks to `sender` (for a channel read by something other than a
    /// controller; the channel's capacity is how many ticks may wait).
    pub fn with_sender(
        name: impl Into<String>,
        interval: Duration,
        sender: mpsc::Sender<Tick>,
    ) -> Self {
        Self {
            name: name.into(),
            interval: interval.max(Duration::from_millis(1)),
            needs_leader: true,
            sender,
        }
    }

    /// Whether the trigger only runs while the manager leads (default `true`).
    pub fn needs_leader(mut self, needs_leader: bool) -> Self {
        self.needs_leader = needs_leader;
        self
    }

    /// The trigger's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The interval between ticks.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Adds the trigger to `manager` as a runnable (leader-elected unless
    /// [`PeriodicTrigger::needs_leader`] said otherwise).
    pub fn add_to(self, manager: &mut Manager) {
        let name = format!("trigger {}", self.name);
        let needs_leader = self.needs_leader;
        manager.add_runnable(name, needs_leader, move |stop| self.run(stop));
    }

    /// Sends ticks until `stop` completes or the receiving side is dropped.
    pub async fn run(self, stop: impl Future<Output = ()> + Send) -> Result<(), BoxError> {
        let mut interval = tokio::time::interval(self.interval);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut stop = std::pin::pin!(stop);
        let mut sequence = 0;
        let mut skipped = 0;
        info!(trigger = %self.name, interval = ?self.interval, "periodic trigger started");
        loop {
            tokio::select! {
                biased;
                () = &mut stop => {
                    info!(trigger = %self.name, "periodic trigger stopped");
                    return Ok(());
                }
                _ = interval.tick() => {}
            }
            let tick = Tick {
                trigger: self.name.clone(),
                sequence,
                skipped,
                at: jiff::Timestamp::now(),
            };
            match self.sender.try_send(tick) {
                Ok(()) => {
                    sequence += 1;
                    skipped = 0;
                }
                Err(TrySendError::Full(_)) => {
                    debug!(trigger = %self.name, "previous tick not taken yet, skipping this one");
                    skipped += 1;
                }
                Err(TrySendError::Closed(_)) => {
                    info!(trigger = %self.name, "nobody receives the ticks any more, trigger stopped");
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::watch;

    use super::*;
    use crate::controller::{Handler, Source};
    use crate::queue::WorkQueue;
    use crate::reconcile::ObjectRef;

    /// Feeds the trigger's channel source into a queue, recording every tick it hands over.
    struct Record(Arc<std::sync::Mutex<Vec<Tick>>>);

    impl Handler<Tick> for Record {
        fn requests(&self, tick: &Tick) -> Vec<ObjectRef> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(tick.clone());
            vec![ObjectRef::namespaced(
                "ns",
                format!("tick-{}", tick.sequence),
            )]
        }
    }

    #[tokio::test(start_paused = true)]
    async fn ticks_at_start_then_every_interval_until_stopped() {
        let (tx, mut ticks) = mpsc::channel(1);
        let trigger = PeriodicTrigger::with_sender("probe", Duration::from_secs(10), tx);
        let (stop, mut stop_rx) = watch::channel(false);
        let run = tokio::spawn(trigger.run(async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        }));
        let receiver = &mut ticks;
        let first = next(receiver).await;
        assert_eq!((first.trigger.as_str(), first.sequence), ("probe", 0));
        let started = tokio::time::Instant::now();
        let second = next(receiver).await;
        assert_eq!(second.sequence, 1);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        let third = next(receiver).await;
        assert_eq!((third.sequence, third.skipped), (2, 0));
        assert_eq!(started.elapsed(), Duration::from_secs(20));

        stop.send_replace(true);
        let result = tokio::time::timeout(Duration::from_secs(1), run)
            .await
            .expect("stops at once")
            .expect("join");
        assert!(result.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_consumer_gets_one_pending_tick_and_the_count_of_skipped_ones() {
        let (tx, mut ticks) = mpsc::channel(1);
        let trigger = PeriodicTrigger::with_sender("probe", Duration::from_secs(1), tx);
        let run = tokio::spawn(trigger.run(std::future::pending()));
        // Nobody reads for 5.5 intervals: one tick waits, the next five are dropped.
        tokio::time::sleep(Duration::from_millis(5500)).await;
        let pending = next(&mut ticks).await;
        assert_eq!((pending.sequence, pending.skipped), (0, 0));
        let following = next(&mut ticks).await;
        assert_eq!((following.sequence, following.skipped), (1, 5));
        run.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn the_trigger_ends_when_the_receiver_is_gone() {
        let (trigger, ticks) = PeriodicTrigger::new("probe", Duration::from_secs(1));
        drop(ticks);
        let result =
            tokio::time::timeout(Duration::from_secs(5), trigger.run(std::future::pending()))
                .await
                .expect("ends");
        assert!(result.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn ticks_reach_the_queue_through_the_channel_source() {
        let (trigger, ticks) = PeriodicTrigger::new("probe", Duration::from_secs(1));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let queue: WorkQueue<ObjectRef> = WorkQueue::new();
        let (stop, stop_rx) = watch::channel(false);
        let source = tokio::spawn(ticks.into_task(
            Arc::new(Record(Arc::clone(&seen))),
            queue.clone(),
            stop_rx,
        ));
        let run = tokio::spawn(trigger.run(std::future::pending()));
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(queue.len(), 3, "ticks 0, 1 and 2 enqueued");
        let sequences: Vec<u64> = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|t| t.sequence)
            .collect();
        assert_eq!(sequences, vec![0, 1, 2]);
        stop.send_replace(true);
        source.await.expect("source stops");
        // The source is gone, so the trigger ends on its next tick.
        tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("trigger ends")
            .expect("join")
            .expect("ok");
    }

    /// Reads the next tick.
    async fn next(ticks: &mut mpsc::Receiver<Tick>) -> Tick {
        tokio::time::timeout(Duration::from_secs(60), ticks.recv())
            .await
            .expect("a tick in time")
            .expect("channel open")
    }
}
