
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
.
yPlaceholder*
dtype0*
shape:
;
cPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

addAddV2xy*
T0

subSubxc*
T0

mulMulxy*
T0
!
truedivRealDivxy*
T0
%

div_no_nanDivNoNanxy*
T0
!
MaximumMaximumxy*
T0
!
MinimumMinimumxc*
T0

AbsAbsx*
T0

PowPowAbsy*
T0
#
floordivFloorDivxy*
T0
#
FloorModFloorModxy*
T0
5
SquaredDifferenceSquaredDifferencexc*
T0

Atan2Atan2xy*
T0
#
xdivy/XdivyXdivyxy*
T0

Abs_1Absy*
T0
!
XlogyXlogyxAbs_1*
T0

add_1Identityadd*
T0

sub_1Identitysub*
T0

mul_1Identitymul*
T0
!
divIdentitytruediv*
T0
-
div_no_nan_1Identity
div_no_nan*
T0
'
	maximum_1IdentityMaximum*
T0
'
	minimum_1IdentityMinimum*
T0

pow_1IdentityPow*
T0
)

floordiv_1Identityfloordiv*
T0
)

floormod_1IdentityFloorMod*
T0
.
sqdiffIdentitySquaredDifference*
T0
#
atan2_1IdentityAtan2*
T0
)
xdivy_1Identityxdivy/Xdivy*
T0
#
xlogy_1IdentityXlogy*
T0"ª