//! One priority level's seats and queues, as upstream's `queueset`: a `Reject` level admits a
//! request while it has a seat and refuses it otherwise; a `Queue` level puts every request in
//! the shortest queue of its flow's hand (shuffle sharding), refusing it when every seat is
//! taken and that queue already holds `queueLengthLimit` requests, and dispatches from the
//! queues by fair queuing: the queue whose oldest request would finish first in virtual time
//! goes next. A queue's virtual clock advances by the work of each request it dispatches
//! (seats × upstream's estimated 3 ms of service) and is corrected by the actual service time
//! when the request ends, so a flow whose requests run long waits longer.
//!
//! A level dispatches up to its current limit, which starts at its nominal limit less half of
//! what it may lend and is then set by the borrowing adjustment ([`super::borrowing`]) from
//! the seat demand the level records here (the seats of its executing and queued requests,
//! exempt levels' included).
//!
//! Every request takes one seat (upstream's work estimator gives lists and watched writes
//! more). The virtual time a newly busy queue starts from is the latest start tag dispatched
//! (start-time fair queuing) rather than upstream's continuously integrated `currentR`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::borrowing::{DemandStats, LevelInput, SeatDemand};
use super::metrics::{FlowCounters, Reason};
use super::retry_after::DroppedRequests;
use super::shuffle::Dealer;

/// Upstream's estimated service time of a request, in seconds.
const ESTIMATED_SERVICE_SECONDS: f64 = 0.003;

/// How a level limits its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Settings {
    /// No limit at all.
    pub(super) exempt: bool,
    /// Seats (the nominal concurrency limit).
    pub(super) limit: usize,
    /// Seats it may lend to other levels.
    pub(super) lendable: usize,
    /// Seats it may borrow from other levels.
    pub(super) borrowing: usize,
    /// Queues, `None` for `Reject`.
    pub(super) queuing: Option<Queuing>,
}

/// A `Queue` level's queuing configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Queuing {
    /// Number of queues.
    pub(super) queues: usize,
    /// Queues in a flow's hand.
    pub(super) hand_size: usize,
    /// Requests one queue holds at most while every seat is taken.
    pub(super) queue_length_limit: usize,
}

/// One priority level. Requests in flight keep it alive after a configuration drops it, so
/// its queues drain (upstream's quiescing).
#[derive(Debug)]
pub(super) struct Level {
    /// The PriorityLevelConfiguration's name.
    name: String,
    /// Whether it is exempt now: the fast path that takes no lock.
    exempt: AtomicBool,
    state: Mutex<State>,
    dropped: DroppedRequests,
}

#[derive(Debug)]
struct State {
    settings: Settings,
    /// Seats it may use now (see [`super::borrowing`]).
    current: usize,
    /// Its seat demand over the current adjustment period.
    demand: SeatDemand,
    /// Its demand over the past periods.
    stats: DemandStats,
    dealer: Option<Dealer>,
    /// Seats taken by executing requests.
    seats_in_use: usize,
    /// Requests waiting in all queues.
    waiting: usize,
    queues: Vec<Queue>,
    /// The latest virtual start time dispatched.
    current_r: f64,
    /// Requests enqueued so far (rotates the scan of a hand, as upstream).
    enqueues: usize,
    /// Where the last dispatch scan ended.
    robin: usize,
    next_ticket: u64,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: VecDeque<Waiter>,
    /// Virtual time at which the queue's next request starts.
    next_dispatch_r: f64,
    /// Requests of this queue executing.
    executing: usize,
}

impl Queue {
    fn idle(&self) -> bool {
        self.waiting.is_empty() && self.executing == 0
    }
}

#[derive(Debug)]
struct Waiter {
    ticket: u64,
    arrival_r: f64,
    flow: Arc<FlowCounters>,
    tx: oneshot::Sender<Seat>,
}

/// What a request holds while it executes: one seat of its level (none for an exempt one).
/// Dropping it frees the seat and dispatches the next waiting request.
#[derive(Debug)]
pub(super) struct Seat {
    flow: Arc<FlowCounters>,
    held: Option<Held>,
    /// The exempt level whose demand it counts in.
    exempt: Option<Arc<Level>>,
}

#[derive(Debug)]
struct Held {
    level: Arc<Level>,
    queue: Option<usize>,
    started: Instant,
}

impl Seat {
    /// A request's place in exempt level `level`.
    fn exempt(level: &Arc<Level>, flow: &Arc<FlowCounters>) -> Self {
        flow.executing.fetch_add(1, Ordering::Relaxed);
        Self {
            flow: flow.clone(),
            held: None,
            exempt: Some(level.clone()),
        }
    }

    /// Whether it holds a seat of a limited level (an exempt request's holds none).
    pub(super) fn holds_a_seat(&self) -> bool {
        self.held.is_some()
    }

    fn held(level: &Arc<Level>, queue: Option<usize>, flow: &Arc<FlowCounters>) -> Self {
        flow.executing.fetch_add(1, Ordering::Relaxed);
        Self {
            flow: flow.clone(),
            held: Some(Held {
                level: level.clone(),
                queue,
                started: Instant::now(),
            }),
            exempt: None,
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.flow.executing.fetch_sub(1, Ordering::Relaxed);
        if let Some(held) = self.held.take() {
            held.level.finish(held.queue, held.started.elapsed());
        }
        if let Some(level) = self.exempt.take() {
            let mut s = level.lock();
            s.seats_in_use = s.seats_in_use.saturating_sub(1);
            s.note_demand();
        }
    }
}

/// What a level decides for a new request.
#[derive(Debug)]
pub(super) enum Admission {
    /// Execute now.
    Run(Seat),
    /// Queued: wait for a seat.
    Wait(Waiting),
    /// Refused.
    Reject(Reason),
}

/// A queued request. Dropping it before it got its seat withdraws it (`cancelled`).
#[derive(Debug)]
pub(super) struct Waiting {
    level: Arc<Level>,
    queue: usize,
    ticket: u64,
    flow: Arc<FlowCounters>,
    rx: oneshot::Receiver<Seat>,
    settled: bool,
}

impl Waiting {
    /// Waits at most `limit` for a seat; refused (`time-out`) after that.
    pub(super) async fn wait(mut self, limit: Duration) -> Result<Seat, Reason> {
        let outcome = tokio::time::timeout(limit, &mut self.rx).await;
        self.settled = true;
        match outcome {
            Ok(Ok(seat)) => Ok(seat),
            Ok(Err(_)) => Err(Reason::TimeOut),
            Err(_) if self.level.withdraw(self.queue, self.ticket) => {
                self.flow.reject(Reason::TimeOut);
                Err(Reason::TimeOut)
            }
            // Dispatched while the wait ended.
            Err(_) => self.rx.try_recv().map_err(|_| Reason::TimeOut),
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.settled && self.level.withdraw(self.queue, self.ticket) {
            self.flow.reject(Reason::Cancelled);
        }
    }
}

/// Seats dispatched to requests that went away meanwhile, freed once the lock is released.
type Orphans = Vec<Seat>;

impl Level {
    /// A level with `settings`.
    pub(super) fn new(name: &str, settings: Settings) -> Arc<Self> {
        let level = Arc::new(Self {
            name: name.to_string(),
            exempt: AtomicBool::new(settings.exempt),
            state: Mutex::new(State {
                settings,
                current: settings.limit - settings.lendable.min(settings.limit) / 2,
                demand: SeatDemand::new(Instant::now()),
                stats: DemandStats::default(),
                dealer: None,
                seats_in_use: 0,
                waiting: 0,
                queues: Vec::new(),
                current_r: 0.0,
                enqueues: 0,
                robin: 0,
                next_ticket: 0,
            }),
            dropped: DroppedRequests::default(),
        });
        level.configure(settings);
        level
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the level is exempt.
    pub(super) fn is_exempt(&self) -> bool {
        self.exempt.load(Ordering::Relaxed)
    }

    /// Applies new settings (a changed PriorityLevelConfiguration or server share); requests
    /// already queued stay in their queues.
    pub(super) fn configure(self: &Arc<Self>, settings: Settings) {
        let mut orphans = Orphans::new();
        {
            let mut s = self.lock();
            s.settings = settings;
            s.dealer = settings
                .queuing
                .and_then(|q| Dealer::new(q.queues, q.hand_size));
            let desired = s.desired_queues();
            while s.queues.len() < desired {
                let r = s.current_r;
                s.queues.push(Queue {
                    next_dispatch_r: r,
                    ..Queue::default()
                });
            }
            s.trim();
            self.exempt.store(settings.exempt, Ordering::Relaxed);
            self.dispatch(&mut s, &mut orphans);
        }
        drop(orphans);
    }

    /// Admits a request of flow `flow` (whose hash is `hash`).
    pub(super) fn start(self: &Arc<Self>, hash: u64, flow: &Arc<FlowCounters>) -> Admission {
        let mut orphans = Orphans::new();
        let admission = {
            let mut s = self.lock();
            if s.settings.exempt {
                s.seats_in_use += 1;
                s.note_demand();
                return Admission::Run(Seat::exempt(self, flow));
            }
            match (s.settings.queuing, s.dealer) {
                (Some(queuing), Some(dealer)) => {
                    self.enqueue(&mut s, &dealer, queuing, hash, flow, &mut orphans)
                }
                _ if s.can_accommodate(1) => {
                    s.seats_in_use += 1;
                    s.note_demand();
                    Admission::Run(Seat::held(self, None, flow))
                }
                _ => {
                    tracing::debug!(level = %self.name, "rejected: concurrency limit");
                    flow.reject(Reason::ConcurrencyLimit);
                    Admission::Reject(Reason::ConcurrencyLimit)
                }
            }
        };
        drop(orphans);
        admission
    }

    /// Shuffle-shards a request into a queue, or refuses it when the queue is full.
    fn enqueue(
        self: &Arc<Self>,
        s: &mut State,
        dealer: &Dealer,
        queuing: Queuing,
        hash: u64,
        flow: &Arc<FlowCounters>,
        orphans: &mut Orphans,
    ) -> Admission {
        let hand = dealer.deal(hash);
        let offset = s.enqueues % hand.len();
        s.enqueues = s.enqueues.wrapping_add(1);
        let mut best: Option<(usize, usize)> = None;
        for i in 0..hand.len() {
            let index = hand[(offset + i) % hand.len()];
            let length = s.queues.get(index).map_or(usize::MAX, |q| q.waiting.len());
            if best.is_none_or(|(_, shortest)| length < shortest) {
                best = Some((index, length));
            }
        }
        let Some((index, length)) = best.filter(|(i, _)| *i < s.queues.len()) else {
            flow.reject(Reason::QueueFull);
            return Admission::Reject(Reason::QueueFull);
        };
        if s.seats_in_use >= s.current && length >= queuing.queue_length_limit {
            tracing::debug!(level = %self.name, queue = index, "rejected: queue full");
            flow.reject(Reason::QueueFull);
            return Admission::Reject(Reason::QueueFull);
        }
        let (tx, rx) = oneshot::channel();
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        let current_r = s.current_r;
        let queue = &mut s.queues[index];
        if queue.idle() {
            queue.next_dispatch_r = current_r;
        }
        queue.waiting.push_back(Waiter {
            ticket,
            arrival_r: current_r,
            flow: flow.clone(),
            tx,
        });
        s.waiting += 1;
        s.note_demand();
        flow.waiting.fetch_add(1, Ordering::Relaxed);
        s.bound(index);
        self.dispatch(s, orphans);
        Admission::Wait(Waiting {
            level: self.clone(),
            queue: index,
            ticket,
            flow: flow.clone(),
            rx,
            settled: false,
        })
    }

    /// Dispatches queued requests while seats are free (upstream's
    /// `dispatchAsMuchAsPossibleLocked`).
    fn dispatch(self: &Arc<Self>, s: &mut State, orphans: &mut Orphans) {
        while s.waiting > 0 && (s.settings.exempt || s.seats_in_use < s.current) {
            if !self.dispatch_one(s, orphans) {
                break;
            }
        }
    }

    /// Dispatches the oldest request of the queue whose next request finishes first in
    /// virtual time.
    fn dispatch_one(self: &Arc<Self>, s: &mut State, orphans: &mut Orphans) -> bool {
        let count = s.queues.len();
        let mut chosen: Option<(usize, f64)> = None;
        for _ in 0..count {
            s.robin = (s.robin + 1) % count;
            let queue = &s.queues[s.robin];
            if queue.waiting.is_empty() {
                continue;
            }
            let finish = queue.next_dispatch_r + ESTIMATED_SERVICE_SECONDS;
            if chosen.is_none_or(|(_, best)| finish < best) {
                chosen = Some((s.robin, finish));
            }
        }
        let Some((index, _)) = chosen else {
            return false;
        };
        if !s.can_accommodate(1) {
            return false;
        }
        s.robin = index;
        let queue = &mut s.queues[index];
        let Some(waiter) = queue.waiting.pop_front() else {
            return false;
        };
        queue.executing += 1;
        let start = queue.next_dispatch_r;
        queue.next_dispatch_r += ESTIMATED_SERVICE_SECONDS;
        s.current_r = s.current_r.max(start);
        s.waiting -= 1;
        s.seats_in_use += 1;
        s.note_demand();
        s.bound(index);
        waiter.flow.waiting.fetch_sub(1, Ordering::Relaxed);
        let seat = Seat::held(self, Some(index), &waiter.flow);
        if let Err(seat) = waiter.tx.send(seat) {
            orphans.push(seat);
        }
        true
    }

    /// A request that held a seat (from queue `queue`, for `took`) ended.
    fn finish(self: &Arc<Self>, queue: Option<usize>, took: Duration) {
        let mut orphans = Orphans::new();
        {
            let mut s = self.lock();
            s.seats_in_use = s.seats_in_use.saturating_sub(1);
            s.note_demand();
            if let Some(index) = queue
                && let Some(q) = s.queues.get_mut(index)
            {
                q.executing = q.executing.saturating_sub(1);
                q.next_dispatch_r -= ESTIMATED_SERVICE_SECONDS - took.as_secs_f64();
                s.bound(index);
            }
            self.dispatch(&mut s, &mut orphans);
            s.trim();
        }
        drop(orphans);
    }

    /// Removes a still-queued request; `false` when it is no longer queued (dispatched).
    fn withdraw(&self, queue: usize, ticket: u64) -> bool {
        let mut s = self.lock();
        let Some(q) = s.queues.get_mut(queue) else {
            return false;
        };
        let Some(position) = q.waiting.iter().position(|w| w.ticket == ticket) else {
            return false;
        };
        if let Some(waiter) = q.waiting.remove(position) {
            waiter.flow.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        s.waiting -= 1;
        s.note_demand();
        s.bound(queue);
        s.trim();
        true
    }

    /// Ends the demand's adjustment period at `now`: the level as the adjustment sees it.
    pub(super) fn borrowing_input(&self, now: Instant) -> LevelInput {
        let mut s = self.lock();
        let observed = s.demand.reset(now);
        s.stats.update(&observed);
        let settings = s.settings;
        LevelInput {
            exempt: settings.exempt,
            nominal: settings.limit,
            lower: settings.limit - settings.lendable.min(settings.limit),
            upper: settings.limit + settings.borrowing,
            current: s.current,
            stats: s.stats,
        }
    }

    /// Sets the seats the level may use now, dispatching queued requests if it has more.
    pub(super) fn set_current(self: &Arc<Self>, current: usize) {
        let mut orphans = Orphans::new();
        {
            let mut s = self.lock();
            s.current = current;
            self.dispatch(&mut s, &mut orphans);
        }
        drop(orphans);
    }

    /// The seats the level may use now.
    #[cfg(test)]
    pub(super) fn current(&self) -> usize {
        self.lock().current
    }

    /// Records a refused request; returns the `Retry-After` seconds to answer it with.
    pub(super) fn record_drop(&self) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.dropped.record(now)
    }
}

impl State {
    fn desired_queues(&self) -> usize {
        match (self.settings.queuing, self.dealer) {
            (Some(q), Some(_)) => q.queues,
            _ => 0,
        }
    }

    /// Upstream's `canAccommodateSeatsLocked` for one seat: a request wider than the limit
    /// runs alone.
    fn can_accommodate(&self, seats: usize) -> bool {
        if self.settings.exempt {
            return true;
        }
        if seats > self.current {
            return self.seats_in_use == 0;
        }
        self.seats_in_use + seats <= self.current
    }

    /// Records the demand as it is now.
    fn note_demand(&mut self) {
        let demand = (self.seats_in_use + self.waiting) as f64;
        self.demand.set(demand, Instant::now());
    }

    /// A queue's next dispatch is never before its oldest request arrived.
    fn bound(&mut self, index: usize) {
        if let Some(q) = self.queues.get_mut(index)
            && let Some(oldest) = q.waiting.front()
            && q.next_dispatch_r < oldest.arrival_r
        {
            q.next_dispatch_r = oldest.arrival_r;
        }
    }

    /// Drops idle queues beyond the configured number (busy ones stay until they drain).
    fn trim(&mut self) {
        let desired = self.desired_queues();
        while self.queues.len() > desired && self.queues.last().is_some_and(Queue::idle) {
            self.queues.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(
        limit: usize,
        queues: usize,
        hand_size: usize,
        queue_length_limit: usize,
    ) -> Settings {
        Settings {
            exempt: false,
            limit,
            lendable: 0,
            borrowing: 0,
            queuing: Some(Queuing {
                queues,
                hand_size,
                queue_length_limit,
            }),
        }
    }

    fn run(admission: Admission) -> Option<Seat> {
        match admission {
            Admission::Run(seat) => Some(seat),
            _ => None,
        }
    }

    #[tokio::test]
    async fn reject_levels_admit_up_to_their_limit() {
        let level = Level::new(
            "l",
            Settings {
                exempt: false,
                limit: 2,
                lendable: 0,
                borrowing: 0,
                queuing: None,
            },
        );
        let flow = Arc::new(FlowCounters::default());
        let a = run(level.start(0, &flow));
        let b = run(level.start(0, &flow));
        assert!(a.is_some() && b.is_some());
        assert_eq!(flow.executing.load(Ordering::Relaxed), 2);
        assert!(matches!(
            level.start(0, &flow),
            Admission::Reject(Reason::ConcurrencyLimit)
        ));
        drop(a);
        assert!(run(level.start(0, &flow)).is_some());
        assert_eq!(level.record_drop(), 1);
    }

    #[tokio::test]
    async fn queued_requests_wait_for_a_seat_and_a_full_queue_refuses() {
        let level = Level::new("l", queued(1, 1, 1, 1));
        let flow = Arc::new(FlowCounters::default());
        let Admission::Wait(first) = level.start(1, &flow) else {
            panic!("queue levels queue every request");
        };
        let held = first.wait(Duration::from_secs(5)).await;
        assert!(held.is_ok(), "dispatched at once while a seat is free");
        let Admission::Wait(second) = level.start(1, &flow) else {
            panic!("queued");
        };
        assert_eq!(flow.waiting.load(Ordering::Relaxed), 1);
        assert!(matches!(
            level.start(1, &flow),
            Admission::Reject(Reason::QueueFull)
        ));
        let waiter = tokio::spawn(second.wait(Duration::from_secs(30)));
        drop(held);
        let got = waiter.await.ok().and_then(Result::ok);
        assert!(got.is_some(), "the freed seat goes to the queued request");
        assert_eq!(flow.waiting.load(Ordering::Relaxed), 0);
        // Times out while the seat stays taken.
        let Admission::Wait(third) = level.start(1, &flow) else {
            panic!("queued");
        };
        assert_eq!(
            third.wait(Duration::from_millis(20)).await.err(),
            Some(Reason::TimeOut)
        );
        assert_eq!(flow.waiting.load(Ordering::Relaxed), 0);
        // A dropped (cancelled) waiter leaves its queue.
        let Admission::Wait(fourth) = level.start(1, &flow) else {
            panic!("queued");
        };
        drop(fourth);
        assert_eq!(flow.waiting.load(Ordering::Relaxed), 0);
        drop(got);
        assert_eq!(flow.executing.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn fair_queuing_alternates_between_flows() {
        // Two queues, hand of one: flows with hashes 0 and 1 get queues 0 and 1.
        let level = Level::new("l", queued(1, 2, 1, 10));
        let flow = Arc::new(FlowCounters::default());
        let Admission::Wait(first) = level.start(0, &flow) else {
            panic!("queued");
        };
        let held = first.wait(Duration::from_secs(1)).await;
        // Flow 0 queues three, then flow 1 one: flow 1 is served second, not last.
        let mut order = Vec::new();
        let mut waits = Vec::new();
        for (name, hash) in [("a1", 0), ("a2", 0), ("a3", 0), ("b1", 1)] {
            let Admission::Wait(w) = level.start(hash, &flow) else {
                panic!("queued");
            };
            waits.push((name, w));
        }
        drop(held);
        let mut pending: Vec<_> = waits
            .into_iter()
            .map(|(name, w)| (name, Box::pin(w.wait(Duration::from_secs(5)))))
            .collect();
        while !pending.is_empty() {
            let (seat, index, _) =
                futures::future::select_all(pending.iter_mut().map(|(_, f)| f.as_mut())).await;
            let (name, _) = pending.remove(index);
            order.push(name);
            drop(seat);
        }
        let b1 = order.iter().position(|n| *n == "b1");
        assert!(b1.is_some_and(|i| i < 2), "{order:?}");
        assert_eq!(
            order
                .iter()
                .filter(|n| n.starts_with('a'))
                .collect::<Vec<_>>(),
            [&"a1", &"a2", &"a3"],
            "a queue is first in, first out"
        );
    }

    #[tokio::test]
    async fn a_raised_current_limit_dispatches_queued_requests_and_demand_is_recorded() {
        let settings = Settings {
            lendable: 0,
            borrowing: 2,
            ..queued(1, 1, 1, 10)
        };
        let level = Level::new("l", settings);
        assert_eq!(level.current(), 1);
        let flow = Arc::new(FlowCounters::default());
        let mut waits = Vec::new();
        for _ in 0..3 {
            let Admission::Wait(w) = level.start(0, &flow) else {
                panic!("queued");
            };
            waits.push(w);
        }
        assert_eq!(flow.executing.load(Ordering::Relaxed), 1);
        assert_eq!(flow.waiting.load(Ordering::Relaxed), 2);
        let input = level.borrowing_input(Instant::now());
        assert_eq!(input.stats.high_watermark, 3, "executing and queued");
        assert_eq!((input.nominal, input.lower, input.upper), (1, 1, 3));
        level.set_current(3);
        assert_eq!(flow.executing.load(Ordering::Relaxed), 3);
        assert_eq!(flow.waiting.load(Ordering::Relaxed), 0);
        let mut seats = Vec::new();
        for w in waits {
            seats.push(w.wait(Duration::from_secs(1)).await);
        }
        assert!(seats.iter().all(Result::is_ok));
    }

    #[test]
    fn a_new_level_starts_with_half_of_what_it_may_lend_lent() {
        let level = Level::new(
            "l",
            Settings {
                lendable: 4,
                borrowing: 0,
                ..queued(10, 1, 1, 1)
            },
        );
        assert_eq!(level.current(), 8);
    }

    #[test]
    fn exempt_levels_take_no_seat() {
        let level = Level::new(
            "exempt",
            Settings {
                exempt: true,
                limit: 0,
                lendable: 0,
                borrowing: 0,
                queuing: None,
            },
        );
        let flow = Arc::new(FlowCounters::default());
        let seats: Vec<_> = (0..100)
            .filter_map(|_| run(level.start(0, &flow)))
            .collect();
        assert_eq!(seats.len(), 100);
        assert_eq!(flow.executing.load(Ordering::Relaxed), 100);
    }
}
