
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

AbsAbsx*
T0

NegNegx*
T0

SignSignx*
T0

FloorFloorx*
T0

CeilCeilx*
T0

RoundRoundx*
T0

RintRintx*
T0

IsNanIsNanx*
T0

IsInfIsInfx*
T0
 
IsFiniteIsFinitex*
T0

abs_1IdentityAbs*
T0

neg_1IdentityNeg*
T0
!
sign_1IdentitySign*
T0
#
floor_1IdentityFloor*
T0
!
ceil_1IdentityCeil*
T0
#
round_1IdentityRound*
T0
!
rint_1IdentityRint*
T0
#
isnan_1IdentityIsNan*
T0

#
isinf_1IdentityIsInf*
T0

)

isfinite_1IdentityIsFinite*
T0
"ª