//! Shuffle sharding, as upstream's `shufflesharding.Dealer`: a flow's hash deals it a hand of
//! distinct queues out of a deck, so two flows rarely share all their queues; and the flow's
//! hash itself (`hashFlowID`: SHA-256 of the FlowSchema's name, a zero byte and the flow
//! distinguisher, its first eight bytes little-endian).

/// Deals hands of `hand_size` distinct cards (queue indexes) out of `deck_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Dealer {
    deck_size: usize,
    hand_size: usize,
}

/// Upstream's limit on the hash bits a deal may consume.
const MAX_HASH_BITS: f64 = 60.0;

impl Dealer {
    /// A dealer, `None` for sizes upstream refuses (validation refuses them first).
    pub(super) fn new(deck_size: usize, hand_size: usize) -> Option<Self> {
        let usable = deck_size > 0
            && hand_size > 0
            && hand_size <= deck_size
            && deck_size <= 1 << 26
            && ((deck_size as f64).log2() * hand_size as f64).ceil() <= MAX_HASH_BITS;
        usable.then_some(Self {
            deck_size,
            hand_size,
        })
    }

    /// The hand `hash` deals, in dealing order.
    pub(super) fn deal(&self, mut hash: u64) -> Vec<usize> {
        let mut remainders = Vec::with_capacity(self.hand_size);
        for i in 0..self.hand_size {
            let size = (self.deck_size - i) as u64;
            remainders.push((hash % size) as usize);
            hash /= size;
        }
        (0..self.hand_size)
            .map(|i| {
                let mut card = remainders[i];
                for j in (1..=i).rev() {
                    if card >= remainders[j - 1] {
                        card += 1;
                    }
                }
                card
            })
            .collect()
    }
}

/// The hash of a flow: its FlowSchema's name and its distinguisher.
pub(super) fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    context.update(schema.as_bytes());
    context.update(&[0]);
    context.update(distinguisher.as_bytes());
    let digest = context.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_hold_distinct_cards_of_the_deck() {
        let dealer = Dealer::new(128, 6);
        assert!(dealer.is_some());
        let dealer = dealer.unwrap_or(Dealer {
            deck_size: 1,
            hand_size: 1,
        });
        for hash in [0u64, 1, 42, u64::MAX, flow_hash("global-default", "alice")] {
            let mut hand = dealer.deal(hash);
            assert_eq!(hand.len(), 6);
            assert!(hand.iter().all(|&c| c < 128));
            hand.sort_unstable();
            hand.dedup();
            assert_eq!(hand.len(), 6, "cards are distinct");
        }
        // Upstream's arithmetic: hash 0 deals 0, 1, 2, ... (each remainder 0, shifted past
        // the cards already dealt).
        assert_eq!(dealer.deal(0), [0, 1, 2, 3, 4, 5]);
        // 7 = 7 % 128 then 0s: the first card is 7, the next ones skip it.
        assert_eq!(dealer.deal(7), [7, 0, 1, 2, 3, 4]);
    }

    #[test]
    fn refuses_what_upstream_refuses() {
        assert!(Dealer::new(0, 1).is_none());
        assert!(Dealer::new(4, 5).is_none());
        assert!(Dealer::new(1 << 27, 1).is_none());
        assert!(Dealer::new(1 << 20, 4).is_none(), "80 bits of entropy");
        assert!(Dealer::new(1, 1).is_some());
    }

    #[test]
    fn flows_hash_by_schema_and_distinguisher() {
        assert_eq!(flow_hash("a", "b"), flow_hash("a", "b"));
        assert_ne!(flow_hash("a", "b"), flow_hash("a", "c"));
        assert_ne!(
            flow_hash("ab", ""),
            flow_hash("a", "b"),
            "the separator counts"
        );
    }
}
