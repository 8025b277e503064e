//! Deadlock cycles among monitors: a thread waits for a monitor, the monitor's owner waits for
//! another, and so on back to the first thread.

use std::collections::{BTreeMap, HashMap, HashSet};

/// The cycles of the wait-for graph: `waits` maps a thread to the object of the monitor it
/// waits for, `owners` an object to the thread holding its monitor. Each cycle is listed once,
/// starting from its smallest thread id, members in wait order (each waits for the next's
/// monitor).
pub(crate) fn cycles(waits: &BTreeMap<u32, u64>, owners: &HashMap<u64, u32>) -> Vec<Vec<u32>> {
    let mut done: HashSet<u32> = HashSet::new();
    let mut found = Vec::new();
    for &start in waits.keys() {
        if done.contains(&start) {
            continue;
        }
        let mut path: Vec<u32> = Vec::new();
        let mut on_path: HashMap<u32, usize> = HashMap::new();
        let mut t = start;
        loop {
            if let Some(&i) = on_path.get(&t) {
                let mut cycle = path[i..].to_vec();
                if let Some(min) = cycle.iter().enumerate().min_by_key(|(_, id)| **id) {
                    let at = min.0;
                    cycle.rotate_left(at);
                }
                found.push(cycle);
                break;
            }
            if done.contains(&t) {
                break;
            }
            on_path.insert(t, path.len());
            path.push(t);
            let Some(next) = waits.get(&t).and_then(|o| owners.get(o)) else {
                break;
            };
            t = *next;
        }
        done.extend(path);
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_lock_deadlock_with_waiters_behind_it_is_one_cycle() {
        // 17 holds A, waits for B; 18 holds B, waits for A; 30..35 wait for A.
        let (a, b) = (0xa0, 0xb0);
        let mut waits = BTreeMap::from([(17, b), (18, a)]);
        for t in 30..35 {
            waits.insert(t, a);
        }
        let owners = HashMap::from([(a, 17), (b, 18)]);
        assert_eq!(cycles(&waits, &owners), vec![vec![17, 18]]);
    }

    #[test]
    fn a_chain_is_no_cycle_and_a_three_cycle_is_found_from_anywhere() {
        let waits = BTreeMap::from([(1, 0x10), (2, 0x20)]);
        let owners = HashMap::from([(0x10, 2), (0x20, 3)]);
        assert!(cycles(&waits, &owners).is_empty());
        let waits = BTreeMap::from([(9, 0x10), (4, 0x20), (7, 0x30), (8, 0x10)]);
        let owners = HashMap::from([(0x10, 4), (0x20, 7), (0x30, 9)]);
        assert_eq!(cycles(&waits, &owners), vec![vec![4, 7, 9]]);
    }

    #[test]
    fn two_separate_cycles_and_a_self_wait() {
        let waits = BTreeMap::from([(1, 0x1), (2, 0x2), (5, 0x5), (6, 0x6), (7, 0x7)]);
        let owners = HashMap::from([(0x1, 2), (0x2, 1), (0x5, 6), (0x6, 5), (0x7, 7)]);
        assert_eq!(
            cycles(&waits, &owners),
            vec![vec![1, 2], vec![5, 6], vec![7]]
        );
    }
}
