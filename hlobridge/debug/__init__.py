"""Seeing what hlobridge did: explain (clusters and reasons), numbered IR dumps, the clustered
graph as GraphDef and Graphviz, per-cluster dispatch statistics, timelines, test helpers."""
