// The checker's types: primitive types, String@r (r a region), references,
// lists, tuples, binary sums, curried functions, named types (data, records,
// aliases, extern types) with arguments, rigid type parameters of generic
// functions, and unification variables. A TyArena owns them; unify() binds
// variables; show() prints a type the way a user writes it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontends/ephapax/Ast.h"

namespace eph::ephapax {

enum class Prim : uint8_t { I32, I64, U32, F32, F64, Bool };

struct Ty {
  // GPU extension: Gpu is a GPU buffer (args[0] the element, args[1] its
  // region, `gpu` how it is owned); Vec/Mat are vecN/matN of F32 (`size` N); Array is a workgroup
  // array [T; size]; Future is what calling an `async fn` gives (args[0]).
  enum Kind : uint8_t { Var, Param, Prim, Unit, String, Region, Ref, List, Tuple, Sum, Fn, Named, Error,
                        Gpu, Vec, Mat, Array, Future } kind = Error;
  enum GpuOwn : uint8_t { View, Linear, Affine } gpu = View;  // GPUBuffer<T>, GPUBuffer<T>!, GPUBufferAffine<T>
  int size = 0;            // Vec/Mat: 2..4; Array: element count
  ephapax::Prim prim = ephapax::Prim::I32;
  Ty* link = nullptr;      // Var: what it is bound to
  int id = 0;              // Var/Param: a number; Region: the region's identity (-1: global `_`)
  bool regionVar = false;  // Var/Param standing for a region
  bool intLit = false;     // Var: the type of an integer literal (only integer types unify with it)
  bool paramLit = false;   // intLit Var of literals only: may also be a type parameter (numeric generics)
  bool floatLit = false;   // Var: the type of a float literal (F32 or F64; F64 when nothing decides)
  bool mut = false;        // Ref
  std::string name;        // Param, Region, Named
  TypeDecl* decl = nullptr;  // Named
  std::vector<Ty*> args;   // String: [region]; Ref/List: [elem]; Tuple parts; Sum/Fn: [a, b]; Named args
};

class TyArena {
 public:
  Ty* make(Ty t);
  Ty* var(bool region = false);
  Ty* prim(Prim p);
  Ty* unit();
  Ty* error();
  Ty* region(int id, std::string name);
  Ty* string(Ty* region);
  Ty* ref(Ty* elem, bool mut);
  Ty* list(Ty* elem);
  Ty* tuple(std::vector<Ty*> parts);
  Ty* sum(Ty* a, Ty* b);
  Ty* fn(Ty* a, Ty* b);
  Ty* named(TypeDecl* d, std::vector<Ty*> args);
  Ty* param(std::string name, int id, bool region = false);
  // GPU extension. A GPU buffer's type names the region it lives in (a fresh
  // region variable when none is given: a buffer that outlives every region).
  Ty* gpu(Ty* elem, Ty::GpuOwn own, Ty* region = nullptr);
  Ty* vec(int n);
  Ty* mat(int n);
  Ty* array(Ty* elem, int n);
  Ty* future(Ty* t);

 private:
  std::vector<std::unique_ptr<Ty>> all_;
  int nextVar_ = 0;
};

// Follows bound variables.
Ty* resolve(Ty* t);
// A named alias (`type`, `linear type`, `affine type` = T) with its
// arguments substituted; null for anything else.
Ty* expandAlias(TyArena& a, Ty* t);
// t with variables followed and aliases expanded.
Ty* core(TyArena& a, Ty* t);
// Replaces Params (by id) with `with[id]`-style lookups through `subst`.
Ty* substitute(TyArena& a, Ty* t, const std::vector<std::pair<int, Ty*>>& subst);
// The field types of a data constructor / record for a Named type's arguments.
std::vector<Ty*> ctorFields(TyArena& a, Ty* named, size_t ctor);
std::vector<Ty*> recordFields(TyArena& a, Ty* named);

// Unifies; false (leaving partial bindings harmlessly) when the types differ.
bool unify(TyArena& a, Ty* x, Ty* y);

// Must be used exactly once when bound by a linear binding: String@r, `linear
// type`s, GPUBuffer<T>!, Future<T> and aggregates holding them. With
// `gpuAffine` (--mode affine) an owned GPU buffer counts as affine instead.
bool isLinear(TyArena& a, Ty* t, bool gpuAffine = false);
// Declared `affine type`, GPUBufferAffine<T> (or holding one) and not linear.
bool isAffine(TyArena& a, Ty* t, bool gpuAffine = false);
// An owned GPU buffer: GPUBuffer<T>! or GPUBufferAffine<T> (not a view).
bool isOwnedGpu(Ty* t);
// A type mentions region id `region` (for E003).
bool mentionsRegion(Ty* t, int region);
// The first region (not global) the type mentions, or -1.
int firstRegion(Ty* t, std::string* name = nullptr);
// A numeric primitive (I32, I64, U32, F32, F64).
bool isNumeric(Ty* t);

std::string show(Ty* t);

}  // namespace eph::ephapax
