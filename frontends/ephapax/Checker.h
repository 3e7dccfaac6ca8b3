// The Ephapax checker, in two passes over a parsed program:
//
//  1. typeCheck: names (locals, functions, constants, constructors, types),
//     type inference by unification (let-bound values, generic functions and
//     data are instantiated per use), regions (E003 escape, E006 inactive
//     region), arity (E106), exhaustiveness (E105). It annotates every
//     expression with its type and every variable with what it refers to.
//  2. checkOwnership (Ownership.cpp): the linear and affine rules — `let!`
//     bindings and linear parameters exactly once, `let` bindings of linear
//     types at most once, branches agree (E005), copy/drop (E007/E008),
//     region-end obligations (E004), lambdas capture nothing linear (E009).
//
// Errors are E-coded diagnostics; independent errors are all reported.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/ephapax/Ast.h"
#include "frontends/ephapax/Diag.h"
#include "frontends/ephapax/Types.h"

namespace eph::ephapax {

// A local variable: a parameter, a let / let! / pattern variable.
struct Binding {
  // Mutable: a `var` (never linear; `x = e` assigns it).
  enum Origin : uint8_t { Param, Let, LetBang, Pattern, LambdaParam, HandlerParam, Mutable } origin = Let;
  std::string name;
  Span span;       // where it is bound (for let!: the `let!` keyword)
  Ty* ty = nullptr;
  unsigned lambdaDepth = 0;  // lambdas around the binding
  int id = 0;
};

// A checked program: the AST with types, and what the lowering needs.
struct Checked {
  Program prog;
  TyArena types;
  std::vector<std::unique_ptr<Binding>> bindings;
  std::map<std::string, int> fnIndex;      // function name -> prog.fns index
  std::map<std::string, int> constIndex;   // constant name -> prog.consts index
  std::map<std::string, std::pair<TypeDecl*, int>> ctors;  // constructor -> (data type, variant)
  std::map<std::string, TypeDecl*> typeDecls;
  // --mode affine: owned GPU buffers may be dropped (usageOf says AtMostOnce
  // for them, so the lowering frees an unconsumed one at its scope's end).
  bool affineMode = false;
  // Type parameters (by Ty id) used as numbers (NumericParams.h): their values
  // are plain numbers, used any number of times.
  std::set<int> numericParams;
  Binding* newBinding(Binding b);
};

// Pass 1. Returns true when no type errors were found.
bool typeCheck(Checked& c, DiagSink& diags);
// Pass 2 (runs on the functions pass 1 accepted). True when no errors.
bool checkOwnership(Checked& c, DiagSink& diags);

// How a binding must be used, from its origin, its (resolved) type and
// c.affineMode. A `let` of a GPUBuffer<T>! (linear mode) or of a Future<T> must
// be consumed like a `let!`; in affine mode an owned GPU buffer, even bound
// with `let!`, may be dropped.
enum class Usage : uint8_t {
  Free,      // any number of times
  AtMostOnce,  // affine: may be dropped
  ExactlyOnce, // linear: must be consumed on every path
};
Usage usageOf(Checked& c, const Binding& b);

// How the ownership rules treat owned GPU buffers: `--mode linear` (the
// default) requires each to be consumed; `--mode affine` lets them be
// dropped, and the lowering frees them (docs/ephapax-gpu.md).
struct CheckOptions {
  bool affineMode = false;
};

// Parses and checks (both passes). Null when there were syntax or type
// errors; with ownership errors the program is returned and `diags` holds them.
std::unique_ptr<Checked> check(std::string_view src, DiagSink& diags, const CheckOptions& opts = {});

// Every diagnostic rendered (renderDiag), in order; one whose span is in a
// source the sink registered (a standard library module) with that source.
std::string renderAll(const DiagSink& diags, std::string_view file, std::string_view src);

// True for a file name that ends in ".eph".
bool isEphapaxFile(std::string_view path);

}  // namespace eph::ephapax
