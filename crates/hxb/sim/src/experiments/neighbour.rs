//! neighbour
