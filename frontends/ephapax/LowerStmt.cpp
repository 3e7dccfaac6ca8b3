// Lowering of Ephapax statements (var, assignment, loops, return).
