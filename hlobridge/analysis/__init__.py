"""Facts about a graph, computed before any IR is built: dtypes and shapes of every tensor
(with small constants folded), which cluster inputs must be compile-time constants, and the
graph algorithms (topological orders, reachability) every stage shares."""
