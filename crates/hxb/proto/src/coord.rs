//! Node coordinates in the 3-D hyper-crossbar and dimension-order routing (seed 004 §2.1, §3.4).
//!
//! Every node is named by its (x, y, z) coordinates (§3.4). All nodes that share two coordinates
//! hang on one switch of the third dimension, so a node reaches any node that differs in one
//! coordinate directly. A route to a node that differs in more coordinates corrects them one
//! dimension at a time in the fixed order X, then Y, then Z (the CP-PACS rule, §3.4): at most two
//! relays in 3-D (§2.2).

use std::fmt;

/// Dimensions of the hyper-crossbar.
pub const DIMS: usize = 3;

/// A node's (x, y, z) coordinates; also used for grid sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Coord(pub [u8; DIMS]);

impl Coord {
    /// The node at (x, y, z).
    pub const fn new(x: u8, y: u8, z: u8) -> Self {
        Coord([x, y, z])
    }

    /// The first dimension (X = 0, Y = 1, Z = 2) in which `self` and `to` differ.
    pub fn first_difference(self, to: Coord) -> Option<usize> {
        (0..DIMS).find(|&d| self.0[d] != to.0[d])
    }

    /// The next node on the dimension-order route from `self` to `to` (`to` itself when they
    /// differ in one dimension), and the dimension of the hop; `None` when `self == to`.
    pub fn next_hop(self, to: Coord) -> Option<(Coord, usize)> {
        let d = self.first_difference(to)?;
        let mut next = self;
        next.0[d] = to.0[d];
        Some((next, d))
    }

    /// Relays on the dimension-order route from `self` to `to`: the number of differing
    /// coordinates minus one (0 for a neighbour or for `self`).
    pub fn relays_to(self, to: Coord) -> usize {
        (0..DIMS).filter(|&d| self.0[d] != to.0[d]).count().saturating_sub(1)
    }
}

impl fmt::Display for Coord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{},{})", self.0[0], self.0[1], self.0[2])
    }
}

/// The size of a hyper-crossbar: nodes per dimension (PACS-CS: 16 x 16 x 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid(pub Coord);

impl Grid {
    /// Total nodes.
    pub fn nodes(self) -> usize {
        self.0 .0.iter().map(|&n| usize::from(n)).product()
    }

    /// Whether `c` lies inside the grid.
    pub fn contains(self, c: Coord) -> bool {
        (0..DIMS).all(|d| c.0[d] < self.0 .0[d])
    }

    /// The linear index of `c` (x fastest), in `0..nodes()`; `None` outside the grid.
    pub fn index(self, c: Coord) -> Option<usize> {
        if !self.contains(c) {
            return None;
        }
        let [nx, ny, _] = self.0 .0.map(usize::from);
        let [x, y, z] = c.0.map(usize::from);
        Some(x + nx * (y + ny * z))
    }

    /// The coordinates of linear index `i` (the inverse of [`Grid::index`]); `None` if out of range.
    pub fn coord(self, i: usize) -> Option<Coord> {
        if i >= self.nodes() {
            return None;
        }
        let [nx, ny, _] = self.0 .0.map(usize::from);
        Some(Coord::new((i % nx) as u8, ((i / nx) % ny) as u8, (i / (nx * ny)) as u8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_correct_x_then_y_then_z() {
        // Fig. 1's example grid 5 x 5 x 3: (4,4,2) from (0,0,0) needs 2 relays; §3.4's order
        // goes through (4,0,0) and (4,4,0).
        let (a, b) = (Coord::new(0, 0, 0), Coord::new(4, 4, 2));
        assert_eq!(a.next_hop(b), Some((Coord::new(4, 0, 0), 0)));
        assert_eq!(Coord::new(4, 0, 0).next_hop(b), Some((Coord::new(4, 4, 0), 1)));
        assert_eq!(Coord::new(4, 4, 0).next_hop(b), Some((b, 2)));
        assert_eq!(b.next_hop(b), None);
        assert_eq!((a.relays_to(b), a.relays_to(Coord::new(4, 0, 2)), a.relays_to(Coord::new(0, 3, 0))), (2, 1, 0));
    }

    #[test]
    fn linear_index_round_trips() {
        let g = Grid(Coord::new(16, 16, 10));
        assert_eq!(g.nodes(), 2560);
        for i in 0..g.nodes() {
            assert_eq!(g.index(g.coord(i).unwrap()), Some(i));
        }
        assert_eq!(g.index(Coord::new(16, 0, 0)), None);
        assert_eq!(g.coord(2560), None);
    }
}
