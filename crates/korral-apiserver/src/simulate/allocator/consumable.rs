//! Consumable device capacity (KEP-5075, `DRAConsumableCapacity`), as upstream's
//! structured allocator checks and records it: a request's `capacity.requests` name
//! capacities a device must define; each capacity of the device is consumed by the amount
//! requested, rounded up by the capacity's `requestPolicy` (to the next step of `validRange`
//! from its `min`, or to the next of `validValues`), or when not requested by the policy's
//! `default` or else the whole capacity. An amount the policy does not allow (above
//! `validRange.max`, off its steps, not among `validValues`) or one that, added to what the
//! device's other allocations consume, exceeds the capacity, keeps the device out. A device
//! allowing multiple allocations is shared by claims this way, each allocation getting its
//! own `shareID` and its `consumedCapacity`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::quantity::{Format, Quantity};

/// One capacity of a device.
#[derive(Debug, Clone)]
pub struct Capacity {
    /// How much the device has.
    pub value: Quantity,
    /// How requests for it are rounded and bounded.
    pub policy: Option<RequestPolicy>,
}

/// A capacity's `requestPolicy`.
#[derive(Debug, Clone, Default)]
pub struct RequestPolicy {
    /// Consumed when a request names nothing for the capacity.
    pub default: Option<Quantity>,
    /// The amounts that may be consumed, ascending.
    pub valid_values: Vec<Quantity>,
    /// The range that may be consumed.
    pub valid_range: Option<ValidRange>,
}

/// A `validRange`.
#[derive(Debug, Clone)]
pub struct ValidRange {
    /// The least amount.
    pub min: Quantity,
    /// The largest amount.
    pub max: Option<Quantity>,
    /// Amounts go up from `min` by steps of this.
    pub step: Option<Quantity>,
}

/// Amounts by capacity name.
pub type Amounts = BTreeMap<String, Quantity>;

/// The capacities of a device (its `capacity` member).
pub fn capacities(device: &Value) -> BTreeMap<String, Capacity> {
    let quantity = |v: &Value| v.as_str().and_then(|s| Quantity::parse(s).ok());
    let mut out = BTreeMap::new();
    for (name, capacity) in device["capacity"].as_object().into_iter().flatten() {
        let Some(value) = quantity(&capacity["value"]) else {
            continue;
        };
        let policy = capacity
            .get("requestPolicy")
            .filter(|p| p.is_object())
            .map(|p| RequestPolicy {
                default: quantity(&p["default"]),
                valid_values: p["validValues"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(quantity)
                    .collect(),
                valid_range: quantity(&p["validRange"]["min"]).map(|min| ValidRange {
                    min,
                    max: quantity(&p["validRange"]["max"]),
                    step: quantity(&p["validRange"]["step"]),
                }),
            });
        out.insert(name.clone(), Capacity { value, policy });
    }
    out
}

/// A request's `capacity.requests`.
pub fn requested(request: &Value) -> Amounts {
    request["capacity"]["requests"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, v)| Some((name.clone(), Quantity::parse(v.as_str()?).ok()?)))
        .collect()
}

/// What a request asking for `requested` consumes of each of `capacities` (upstream's
/// `GetConsumedCapacityFromRequest`).
pub fn consumed(requested: &Amounts, capacities: &BTreeMap<String, Capacity>) -> Amounts {
    capacities
        .iter()
        .map(|(name, capacity)| (name.clone(), consumed_of(requested.get(name), capacity)))
        .collect()
}

/// What one capacity gives for a request of `requested` (`None`: nothing asked).
fn consumed_of(requested: Option<&Quantity>, capacity: &Capacity) -> Quantity {
    let Some(requested) = requested else {
        return capacity
            .policy
            .as_ref()
            .and_then(|p| p.default.clone())
            .unwrap_or_else(|| capacity.value.clone());
    };
    let Some(policy) = &capacity.policy else {
        return requested.clone();
    };
    if let Some(range) = &policy.valid_range {
        return round_up_to_step(requested, range);
    }
    if !policy.valid_values.is_empty() {
        return policy
            .valid_values
            .iter()
            .find(|v| requested.cmp(v).is_le())
            .unwrap_or(requested)
            .clone();
    }
    requested.clone()
}

/// `requested` raised to `range.min`, then up to the next step from it.
fn round_up_to_step(requested: &Quantity, range: &ValidRange) -> Quantity {
    if requested.cmp(&range.min).is_lt() {
        return range.min.clone();
    }
    let Some(step) = range
        .step
        .as_ref()
        .map(Quantity::ceil_i64)
        .filter(|s| *s > 0)
    else {
        return requested.clone();
    };
    let min = range.min.ceil_i64();
    let added = requested.ceil_i64().saturating_sub(min);
    let steps = added / step + i64::from(added % step != 0);
    Quantity::from_i64(
        min.saturating_add(step.saturating_mul(steps)),
        Format::BinarySI,
    )
}

/// Whether `amount` breaks `policy` (upstream's `violatesPolicy`).
fn violates(amount: &Quantity, policy: &RequestPolicy) -> bool {
    if policy.default.as_ref().is_some_and(|d| d == amount) {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if range
            .max
            .as_ref()
            .is_some_and(|max| amount.cmp(max).is_gt())
        {
            return true;
        }
        if let Some(step) = range
            .step
            .as_ref()
            .map(Quantity::ceil_i64)
            .filter(|s| *s > 0)
        {
            let added = amount.ceil_i64().saturating_sub(range.min.ceil_i64());
            return added % step != 0;
        }
        return false;
    }
    if !policy.valid_values.is_empty() {
        return !policy.valid_values.iter().any(|v| v.cmp(amount).is_eq());
    }
    false
}

/// Whether a request for `requested` fits a device with `capacities`, of which its other
/// allocations consume `in_use` and the allocation being made `allocating` (upstream's
/// `CmpRequestOverCapacity`).
pub fn fits(
    requested: &Amounts,
    capacities: &BTreeMap<String, Capacity>,
    in_use: Option<&Amounts>,
    allocating: &Amounts,
) -> bool {
    if requested.keys().any(|name| !capacities.contains_key(name)) {
        return false;
    }
    capacities.iter().all(|(name, capacity)| {
        let amount = consumed_of(requested.get(name), capacity);
        if capacity
            .policy
            .as_ref()
            .is_some_and(|p| violates(&amount, p))
        {
            return false;
        }
        let mut total = amount;
        for more in [in_use.and_then(|u| u.get(name)), allocating.get(name)]
            .into_iter()
            .flatten()
        {
            match total.checked_add(more) {
                Some(sum) => total = sum,
                None => return false,
            }
        }
        total.cmp(&capacity.value).is_le()
    })
}

/// Adds `more` to `sums`, capacity by capacity.
pub fn add(sums: &mut Amounts, more: &Amounts) {
    for (name, amount) in more {
        let sum = match sums.get(name) {
            Some(sum) => sum.checked_add(amount),
            None => Some(amount.clone()),
        };
        if let Some(sum) = sum {
            sums.insert(name.clone(), sum);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect(s)
    }

    fn amounts(pairs: &[(&str, &str)]) -> Amounts {
        pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
    }

    fn rendered(a: &Amounts) -> Vec<(String, String)> {
        a.iter().map(|(k, v)| (k.clone(), v.canonical())).collect()
    }

    fn gpu() -> BTreeMap<String, Capacity> {
        capacities(&json!({"capacity": {
            "memory": {"value": "40Gi", "requestPolicy": {"default": "1Gi",
                "validRange": {"min": "1Gi", "step": "1Gi", "max": "20Gi"}}},
            "slots": {"value": "4", "requestPolicy": {"default": "1", "validValues": ["1", "2", "4"]}},
            "bandwidth": {"value": "100"},
        }}))
    }

    #[test]
    fn requests_are_rounded_by_the_policy_and_defaults_fill_the_rest() {
        let caps = gpu();
        // 1.5Gi of memory: the next step, 2Gi; 3 slots: 4; bandwidth not asked: all of it.
        let got = consumed(&amounts(&[("memory", "1.5Gi"), ("slots", "3")]), &caps);
        assert_eq!(
            rendered(&got),
            [
                ("bandwidth".to_string(), "100".to_string()),
                ("memory".to_string(), "2Gi".to_string()),
                ("slots".to_string(), "4".to_string()),
            ]
        );
        // Nothing asked: the defaults (and all of a capacity without a policy).
        let got = consumed(&Amounts::new(), &caps);
        assert_eq!(got["memory"].canonical(), "1Gi");
        assert_eq!(got["slots"].canonical(), "1");
        // Below the range: its minimum.
        let got = consumed(&amounts(&[("memory", "100Mi")]), &caps);
        assert_eq!(got["memory"].canonical(), "1Gi");
    }

    #[test]
    fn a_request_fits_while_the_capacity_lasts_and_the_policy_allows_it() {
        let caps = capacities(&json!({"capacity": {
            "memory": {"value": "8Gi", "requestPolicy": {"default": "1Gi",
                "validRange": {"min": "1Gi", "step": "1Gi", "max": "6Gi"}}},
        }}));
        let ask = amounts(&[("memory", "3Gi")]);
        assert!(fits(&ask, &caps, None, &Amounts::new()));
        // 6Gi in use by other allocations: 3Gi more does not fit.
        let in_use = amounts(&[("memory", "6Gi")]);
        assert!(!fits(&ask, &caps, Some(&in_use), &Amounts::new()));
        // Above the policy's maximum.
        assert!(!fits(
            &amounts(&[("memory", "7Gi")]),
            &caps,
            None,
            &Amounts::new()
        ));
        // What this allocation already takes counts too.
        let allocating = amounts(&[("memory", "6Gi")]);
        assert!(!fits(&ask, &caps, None, &allocating));
        // A capacity the device does not have.
        assert!(!fits(
            &amounts(&[("cores", "1")]),
            &caps,
            None,
            &Amounts::new()
        ));
        // Without a policy the amount asked is what counts, up to the capacity.
        let plain = capacities(&json!({"capacity": {"memory": {"value": "4Gi"}}}));
        assert!(fits(
            &amounts(&[("memory", "4Gi")]),
            &plain,
            None,
            &Amounts::new()
        ));
        assert!(!fits(
            &amounts(&[("memory", "5Gi")]),
            &plain,
            None,
            &Amounts::new()
        ));
        // A device whose capacities a request does not name is consumed whole.
        assert!(!fits(
            &Amounts::new(),
            &plain,
            Some(&amounts(&[("memory", "1")])),
            &Amounts::new()
        ));
    }
}
